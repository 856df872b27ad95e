#!/usr/bin/env bash
# TCP all-reduce on loopback, back to back in one sitting: iperf3 (the ceiling, N parallel streams),
# Open MPI's MPI_Allreduce over its TCP transport (the peer), and spark-collective's multi-process sweep.
# Writes benchmarks/target/bench/: raw outputs, report.md (table with ratios) and chart.png.
# Usage: benchmarks/compare-tcp.sh [group sizes, default "2 4"]
# TRANSPORT=shm compares the same-host paths instead: Open MPI's shared-memory transport against
# spark-collective's shared-memory payload rings (headers still over TCP); output in benchmarks/target/bench-shm.
# Needs: Debian packages openmpi-bin libopenmpi-dev iperf3; the Open MPI peer program from shared/peers
# (PEERS_DIR, default ../shared/peers next to the repository).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
peers=${PEERS_DIR:-$root/../shared/peers}
transport=${TRANSPORT:-tcp}
out=$root/benchmarks/target/bench$([ "$transport" = tcp ] || echo "-$transport")
# TCP only: payloads over the socket even though the processes share a host.
conf=$([ "$transport" = tcp ] && echo transport.sharedMemoryBytes=0 || echo transport.sharedMemoryBytes=16777216)
jar=$root/benchmarks/target/benchmarks.jar
mkdir -p "$out"
[ -f "$jar" ] || (cd "$root" && mvn -B -q -DskipTests package)
sizes=${SIZES:-4,65536,1048576,16777216,67108864}
for n in ${@:-2 4}; do
  echo "== N=$n: iperf3 with $n streams, 1 MiB writes"
  iperf3 -s -B 127.0.0.1 -p 5299 -1 > /dev/null 2>&1 &
  server=$!
  sleep 0.5
  iperf3 -c 127.0.0.1 -p 5299 -t 5 -P "$n" -l 1M -J > "$out/iperf-$n.json"  # 1 MiB writes: a higher ceiling than the 128 KiB default
  wait "$server" 2>/dev/null || true
  echo "== N=$n: Open MPI MPI_Allreduce ($transport)"
  MPI_TRANSPORT=$transport bash "$peers/run-mpi.sh" "$n" 7 0.25 ${sizes//,/ } | tee "$out/mpi-$n.txt"
  echo "== N=$n: spark-collective ($conf)"
  java -cp "$jar" io.sparkcollective.benchmarks.TcpSweep --ranks "$n" --sizes "$sizes" --conf "$conf" \
    --csv "$out/collective-$n.csv" 2>/dev/null | grep -v ' INFO ' | tee "$out/collective-$n.txt"
done
java -Dtransport="$transport" -cp "$jar" io.sparkcollective.benchmarks.SweepReport "$out" ${@:-2 4}
echo "report: $out/report.md, chart: $out/chart.png"
