#!/usr/bin/env bash
# TCP all-reduce on loopback, back to back in one sitting: iperf3 (the ceiling, N parallel streams), every
# peer (Open MPI's MPI_Allreduce over its TCP transport; Gloo's ring, ring_chunked and halving_doubling over its
# TCP transport; XGBoost4J's native collective on a direct buffer) and spark-collective's multi-process sweep.
# Writes benchmarks/target/bench/: raw outputs, report.md (every cell against the best peer) and chart.png.
# Usage: benchmarks/compare-tcp.sh [group sizes, default "2 4"]
# PEERS picks peers (default "mpi gloo xgboost4j"). TRANSPORT=shm compares the same-host paths instead: Open
# MPI's shared-memory transport against spark-collective's shared-memory rings (whole DATA messages in the
# rings, the socket only waking blocked receivers; the other peers have no shared-memory path); output in
# benchmarks/target/bench-shm.
# Needs: Debian packages openmpi-bin libopenmpi-dev libgloo-dev g++ iperf3, Maven (XGBoost4J from Maven
# Central); the peer programs from shared/peers (PEERS_DIR, default ../shared/peers next to the repository).
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
peer_list=${PEERS:-mpi gloo xgboost4j}
[ "$transport" = tcp ] || peer_list=mpi
has() { [[ " $peer_list " == *" $1 "* ]]; }
for n in ${@:-2 4}; do
  echo "== N=$n: iperf3 with $n streams, 1 MiB writes"
  iperf3 -s -B 127.0.0.1 -p 5299 -1 > /dev/null 2>&1 &
  server=$!
  sleep 0.5
  iperf3 -c 127.0.0.1 -p 5299 -t 5 -P "$n" -l 1M -J > "$out/iperf-$n.json"  # 1 MiB writes: a higher ceiling than the 128 KiB default
  wait "$server" 2>/dev/null || true
  if has mpi; then
    echo "== N=$n: Open MPI MPI_Allreduce ($transport)"
    MPI_TRANSPORT=$transport bash "$peers/run-mpi.sh" "$n" 7 0.25 ${sizes//,/ } | tee "$out/mpi-$n.txt"
  fi
  if has gloo; then
    for algo in ring ring_chunked halving_doubling; do
      echo "== N=$n: Gloo $algo"
      bash "$peers/run-gloo.sh" "$n" "$algo" 7 0.25 ${sizes//,/ } | tee "$out/gloo-$algo-$n.txt"
    done
  fi
  if has xgboost4j; then
    echo "== N=$n: XGBoost4J (native all-reduce on a direct buffer)"
    bash "$peers/run-xgboost4j.sh" "$n" direct 7 0.25 ${sizes//,/ } | tee "$out/xgboost4j-$n.txt"
  fi
  echo "== N=$n: spark-collective ($conf)"
  java -cp "$jar" io.sparkcollective.benchmarks.TcpSweep --ranks "$n" --sizes "$sizes" --conf "$conf" \
    --csv "$out/collective-$n.csv" 2>/dev/null | grep -v ' INFO ' | tee "$out/collective-$n.txt"
done
java -Dtransport="$transport" -cp "$jar" io.sparkcollective.benchmarks.SweepReport "$out" ${@:-2 4}
echo "report: $out/report.md, chart: $out/chart.png"
