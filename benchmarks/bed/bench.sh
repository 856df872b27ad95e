#!/usr/bin/env bash
# All-reduce across emulated hosts (netbed.sh), in one sitting: for every link rate and number of hosts,
# iperf3 between two hosts (the link's ceiling), spark-collective's TCP sweep with float32 and with
# bfloat16 on the wire, Gloo's ring_chunked and halving_doubling and Open MPI (shared/peers), one process
# per host; then the Spark sync benchmark on a standalone cluster of the same hosts (the driver on the
# bridge, a host of its own). Writes benchmarks/target/bed-bench: raw outputs and report.md (busbw as a
# share of the link).
#
#   bench.sh                       HOSTS="2 3 4" RATES="1gbit 10gbit"
#   HOSTS="2" RATES="1gbit" SIZES=65536,1048576 SPARK=0 bench.sh      a short run
# SPARK_SIZES (floats, default 1000000,10000000), REPS (7); ALGORITHMS="RING HALVING_DOUBLING DIRECT" adds
# our sweep with each of them forced (to judge AUTO); GLOO=0 skips Gloo (needs libgloo-dev and g++), MPI=0
# Open MPI (needs openmpi-bin and libopenmpi-dev; its daemons start in the hosts' namespaces through
# mpi-agent.sh); PEERS_DIR (default ../shared/peers next to the repository) holds both peers; OUT is the
# output folder. Needs root and a built repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
peers=${PEERS_DIR:-$repo/../shared/peers}
out=${OUT:-$repo/benchmarks/target/bed-bench}
jar=$repo/benchmarks/target/benchmarks.jar
hosts_list=${HOSTS:-2 3 4}
rates=${RATES:-1gbit 10gbit}
sizes=${SIZES:-4,65536,1048576,16777216,67108864}
reps=${REPS:-7}
[ -f "$jar" ] || { echo "bench: build first (mvn -B -q -DskipTests package)" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out"
trap 'bash "$here/cluster.sh" down >/dev/null 2>&1 || true' EXIT

addr() { echo "198.18.0.$((10 + $1))"; }

ours() {  # K WIRE FILE [ALGORITHM]
  local k=$1 wire=$2 file=$3 algorithm=${4:-AUTO} peers_arg="" pids=() rc=0 secret
  secret=$(head -c 24 /dev/urandom | base64)
  for i in $(seq 1 "$k"); do peers_arg+="${peers_arg:+,}$(addr "$i"):7400"; done
  for i in $(seq 1 "$k"); do
    ip netns exec "sc-h$i" env SPARK_COLLECTIVE_SECRET="$secret" java -Xms1g -Xmx3g -XX:+UseParallelGC \
      -cp "$jar" io.sparkcollective.benchmarks.TcpSweepWorker --rank $((i - 1)) --peers "$peers_arg" \
      --sizes "$sizes" --reps "$reps" --wire "$wire" --algorithm "$algorithm" --warmup-ops 20000 \
      > "$out/rank-$i.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  grep -v ' INFO ' "$out/rank-1.log" > "$file"
  cat "$file"
  [ $rc -eq 0 ] || { cat "$out"/rank-*.log >&2; return $rc; }
  rm -f "$out"/rank-*.log
}

gloo() {  # K ALGO FILE
  local k=$1 algo=$2 file=$3 gh=""
  for i in $(seq 1 "$k"); do gh+="${gh:+ }sc-h$i=$(addr "$i")"; done
  GLOO_HOSTS="$gh" bash "$peers/run-gloo.sh" "$k" "$algo" "$reps" 0.25 ${sizes//,/ } | tee "$file"
}

# K FILE: Open MPI's MPI_Allreduce over TCP, a daemon per host started in its namespace. Its defaults (128 KiB
# socket buffers, ranks polling without yielding, which starves the kernel's own network work on two cores)
# gave 8.3 ms for 64 KiB at 2 hosts and 1 Gbit/s; the kernel's buffer sizing and yielding, 0.56 ms.
mpi() {
  local k=$1 file=$2 hosts="" bin
  bin=$(dirname "$(mktemp -u)")/mpi_allreduce_peer
  [ -x "$bin" ] && [ "$bin" -nt "$peers/mpi_allreduce.c" ] || mpicc -O2 -o "$bin" "$peers/mpi_allreduce.c"
  for i in $(seq 1 "$k"); do hosts+="${hosts:+,}$(addr "$i")"; done
  timeout 900 mpirun --allow-run-as-root -np "$k" --host "$hosts" --map-by node \
    --mca plm_rsh_agent "$here/mpi-agent.sh" --mca pml ob1 --mca btl tcp,self \
    --mca btl_tcp_if_include 198.18.0.0/24 --mca oob_tcp_if_include 198.18.0.0/24 \
    --mca btl_tcp_sndbuf 0 --mca btl_tcp_rcvbuf 0 --mca mpi_yield_when_idle 1 \
    "$bin" "$reps" 0.25 ${sizes//,/ } | tee "$file"
}

for rate in $rates; do
  for k in $hosts_list; do
    d=$out/$rate-$k
    mkdir -p "$d"
    bash "$here/netbed.sh" up "$k" "$rate" > /dev/null
    echo "== $k hosts at $rate: iperf3 host 1 -> host 2"
    ip netns exec sc-h2 iperf3 -s -B "$(addr 2)" -p 5299 -1 > /dev/null 2>&1 &
    server=$!
    sleep 0.5
    ip netns exec sc-h1 iperf3 -c "$(addr 2)" -p 5299 -t 3 -J > "$d/iperf.json" || true
    wait "$server" 2>/dev/null || true
    echo "== $k hosts at $rate: spark-collective float32"
    ours "$k" F32 "$d/ours-f32.txt"
    echo "== $k hosts at $rate: spark-collective bfloat16 on the wire"
    ours "$k" BF16 "$d/ours-bf16.txt"
    for algorithm in ${ALGORITHMS:-}; do
      echo "== $k hosts at $rate: spark-collective float32, $algorithm forced"
      ours "$k" F32 "$d/ours-$algorithm.txt" "$algorithm"
    done
    if [ "${GLOO:-1}" != 0 ]; then
      for algo in ring_chunked halving_doubling; do
        echo "== $k hosts at $rate: Gloo $algo"
        gloo "$k" "$algo" "$d/gloo-$algo.txt"
      done
    fi
    if [ "${MPI:-1}" != 0 ]; then
      echo "== $k hosts at $rate: Open MPI (TCP)"
      mpi "$k" "$d/mpi.txt"
    fi
    if [ "${SPARK:-1}" != 0 ]; then
      echo "== $k hosts at $rate: Spark sync benchmark"
      bash "$here/cluster.sh" up "$k" "$rate" > /dev/null
      bash "$here/cluster.sh" submit --conf spark.executor.cores=1 --conf spark.cores.max="$k" \
        --conf spark.executor.memory=1500m --conf spark.executor.instances="$k" --driver-memory 2g \
        --class io.sparkcollective.benchmarks.SparkSyncBenchmark "$jar" --tasks "$k" \
        --sizes "${SPARK_SIZES:-1000000,10000000}" --reps 5 --gather-max 0 --out "$d/spark" \
        > "$d/spark.log" 2>&1 || { tail -n 40 "$d/spark.log" >&2; exit 1; }
      grep -v ' INFO \| WARN ' "$d/spark.log" | tail -n 30
    fi
    bash "$here/cluster.sh" down > /dev/null
  done
done
java -cp "$jar" io.sparkcollective.benchmarks.BedReport "$out" $rates -- $hosts_list
echo "report: $out/report.md"
