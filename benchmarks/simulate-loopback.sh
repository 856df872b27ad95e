#!/usr/bin/env bash
# The simulator against measurements on loopback: for N processes (one rank each, payloads over TCP), every
# algorithm forced and AUTO, then SimulationValidation with the link taken from iperf3 over loopback (one
# stream) and the latency from the 2-process 4-byte all-reduce. Writes benchmarks/target/loopback-validation
# (the tables and validation.md).
#
#   benchmarks/simulate-loopback.sh [group sizes, default "2 3 4"]      SIZES (bytes), REPS (5), ROUNDS (5)
# Needs iperf3 and a built repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
jar=$here/target/benchmarks.jar
out=${OUT:-$here/target/loopback-validation}
sizes=${SIZES:-4,16384,65536,262144,1048576,4194304,16777216}
groups=${*:-2 3 4}
[ -f "$jar" ] || { echo "build first (mvn -B -q -DskipTests package)" >&2; exit 2; }
rounds=${ROUNDS:-5}
rm -rf "$out"
for n in $groups; do
  d=$out/loopback-$n
  mkdir -p "$d"
  iperf3 -s -B 127.0.0.1 -p 5299 -1 > /dev/null 2>&1 &
  server=$!
  sleep 0.5
  iperf3 -c 127.0.0.1 -p 5299 -t 3 -l 256K -J > "$d/iperf.json"
  wait "$server" 2>/dev/null || true
done
# Rounds: every group size and algorithm once per round, the order reversed every other round, so that the
# machine's drift over the sitting falls on every column alike; the validation takes the median of the rounds.
order="f32 RING HALVING_DOUBLING DIRECT RECURSIVE_DOUBLING"
for round in $(seq 1 "$rounds"); do
  suffix=$([ "$round" = 1 ] && echo "" || echo ".$round")
  for n in $groups; do
    d=$out/loopback-$n
    for a in $order; do
      algorithm=$([ "$a" = f32 ] && echo AUTO || echo "$a")
      echo "== round $round, N=$n: $algorithm"
      java -cp "$jar" io.sparkcollective.benchmarks.TcpSweep --ranks "$n" --sizes "$sizes" --reps "${REPS:-5}" \
        --algorithm "$algorithm" --conf transport.sharedMemoryBytes=0 2>/dev/null | grep -v ' INFO ' \
        | tee "$d/ours-$a$suffix.txt"
    done
  done
  order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')
done
java -cp "$jar" io.sparkcollective.benchmarks.SimulationValidation "$out" loopback $groups
