#!/usr/bin/env bash
# The simulator against measurements on loopback: for N processes (one rank each, payloads over TCP), every
# algorithm forced and AUTO, then SimulationValidation with the link taken from iperf3 over loopback (one
# stream) and the latency from the 2-process 4-byte all-reduce. Writes benchmarks/target/loopback-validation
# (the tables and validation.md).
#
#   benchmarks/simulate-loopback.sh [group sizes, default "2 3 4"]      SIZES (bytes), REPS (5)
# Needs iperf3 and a built repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
jar=$here/target/benchmarks.jar
out=${OUT:-$here/target/loopback-validation}
sizes=${SIZES:-4,16384,65536,262144,1048576,4194304,16777216}
groups=${*:-2 3 4}
[ -f "$jar" ] || { echo "build first (mvn -B -q -DskipTests package)" >&2; exit 2; }
rm -rf "$out"
for n in $groups; do
  d=$out/loopback-$n
  mkdir -p "$d"
  iperf3 -s -B 127.0.0.1 -p 5299 -1 > /dev/null 2>&1 &
  server=$!
  sleep 0.5
  iperf3 -c 127.0.0.1 -p 5299 -t 3 -l 256K -J > "$d/iperf.json"
  wait "$server" 2>/dev/null || true
  for a in f32 RING HALVING_DOUBLING DIRECT; do
    algorithm=$([ "$a" = f32 ] && echo AUTO || echo "$a")
    echo "== N=$n: $algorithm"
    java -cp "$jar" io.sparkcollective.benchmarks.TcpSweep --ranks "$n" --sizes "$sizes" --reps "${REPS:-5}" \
      --algorithm "$algorithm" --conf transport.sharedMemoryBytes=0 2>/dev/null | grep -v ' INFO ' \
      | tee "$d/ours-$a.txt"
  done
done
java -cp "$jar" io.sparkcollective.benchmarks.SimulationValidation "$out" loopback $groups
