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
# ROUNDS (default 3) runs every program that many times per group size, interleaved, the order reversed every
# other round (round 1 writes <name>-N.txt, round k <name>-N.k.txt); the report takes each cell's median round
# and prints the range of the ratios the rounds gave one by one (the machines are shared and noisy, so a
# single sitting's ratio can be off by 30%). VECTOR=direct keeps spark-collective's vector in a direct buffer
# (as XGBoost4J's and a Python task's from comm.empty are) instead of a float[]. CONF adds settings to
# spark-collective's (e.g. CONF=segmentBytes=262144 to compare another segment size in the same build); ARGS adds
# options to its TcpSweep (e.g. ARGS="--quiet-passes 0" for the warm-up of a fixed count of all-reduces).
# BIND places the processes: "fit" (the default) binds each of ours and each of Open MPI's to a core of its own
# when the group fits the cores (Open MPI's own default) and leaves them free otherwise; "core" always binds
# (refused for more processes than cores); "none" leaves every process free (Open MPI's too). Gloo's and
# XGBoost4J's launchers start their processes free either way. Free, two processes on two cores run some whole
# sweeps' 1 MiB cell about 1.6x slower than others (the scheduler puts both busy threads on one core for stretches).
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
conf=$conf${CONF:+,$CONF}
jar=$root/benchmarks/target/benchmarks.jar
mkdir -p "$out"
[ -f "$jar" ] || (cd "$root" && mvn -B -q -DskipTests package)
sizes=${SIZES:-4,65536,1048576,16777216,67108864}
peer_list=${PEERS:-mpi gloo xgboost4j}
[ "$transport" = tcp ] || peer_list=mpi
has() { [[ " $peer_list " == *" $1 "* ]]; }
rounds=${ROUNDS:-3}
vector=${VECTOR:-heap}
bind=${BIND:-fit}
# The placement of group size $1: core or none.
placement() {
  case $bind in
    fit) [ "$1" -le "$(nproc)" ] && echo core || echo none ;;
    core|none) echo "$bind" ;;
    *) echo "BIND is fit, core or none, not $bind" >&2; exit 2 ;;
  esac
}
# One program's sweep for group size $1 in round $2 (its output file named by run_as).
suffix() { [ "$2" = 1 ] && echo "" || echo ".$2"; }
run_program() {
  local prog=$1 n=$2 round=$3 s
  s=$(suffix "$n" "$round")
  case $prog in
    mpi)
      echo "== N=$n round $round: Open MPI MPI_Allreduce ($transport)"
      OMPI_MCA_hwloc_base_binding_policy=$(placement "$n") MPI_TRANSPORT=$transport bash "$peers/run-mpi.sh" "$n" 7 0.25 ${sizes//,/ } | tee "$out/mpi-$n$s.txt" ;;
    gloo-*)
      echo "== N=$n round $round: Gloo ${prog#gloo-}"
      bash "$peers/run-gloo.sh" "$n" "${prog#gloo-}" 7 0.25 ${sizes//,/ } | tee "$out/$prog-$n$s.txt" ;;
    xgboost4j)
      echo "== N=$n round $round: XGBoost4J (native all-reduce on a direct buffer)"
      bash "$peers/run-xgboost4j.sh" "$n" direct 7 0.25 ${sizes//,/ } | tee "$out/xgboost4j-$n$s.txt" ;;
    collective)
      echo "== N=$n round $round: spark-collective ($conf, vector $vector)"
      java -cp "$jar" io.sparkcollective.benchmarks.TcpSweep --ranks "$n" --sizes "$sizes" --conf "$conf" \
        --vector "$vector" --bind "$(placement "$n")" --csv "$out/collective-$n$s.csv" ${ARGS:-} 2>/dev/null | grep -v ' INFO ' \
        | tee "$out/collective-$n$s.txt" ;;
  esac
}
programs=""
has mpi && programs="$programs mpi"
has gloo && programs="$programs gloo-ring gloo-ring_chunked gloo-halving_doubling"
has xgboost4j && programs="$programs xgboost4j"
programs="$programs collective"
rm -f "$out"/*.txt "$out"/*.csv
for n in ${@:-2 4}; do
  if [ "$(placement "$n")" = core ]; then
    echo "Placement: each rank's process of spark-collective and of Open MPI bound to a core of its own$( \
      (has gloo || has xgboost4j) && echo "; Gloo's and XGBoost4J's free (their launchers do not bind)")." \
      > "$out/placement-$n.txt"
  else
    echo "Placement: every process free (the scheduler's), Open MPI's too." > "$out/placement-$n.txt"
  fi
  echo "== N=$n: iperf3 with $n streams, 1 MiB writes"
  iperf3 -s -B 127.0.0.1 -p 5299 -1 > /dev/null 2>&1 &
  server=$!
  sleep 0.5
  iperf3 -c 127.0.0.1 -p 5299 -t 5 -P "$n" -l 1M -J > "$out/iperf-$n.json"  # 1 MiB writes: a higher ceiling than the 128 KiB default
  wait "$server" 2>/dev/null || true
  for round in $(seq 1 "$rounds"); do
    order=$programs
    [ $((round % 2)) = 0 ] && order=$(echo $programs | tr ' ' '\n' | tac | tr '\n' ' ')
    for prog in $order; do
      run_program "$prog" "$n" "$round"
    done
  done
done
java -Dtransport="$transport" -cp "$jar" io.sparkcollective.benchmarks.SweepReport "$out" ${@:-2 4}
echo "report: $out/report.md, chart: $out/chart.png"
