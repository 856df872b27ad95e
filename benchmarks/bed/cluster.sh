#!/usr/bin/env bash
# A Spark standalone cluster on the emulated hosts of netbed.sh: the Master in the root namespace
# (198.18.0.1, the driver's side of the bridge) and one Worker per emulated host, bound to its address, all
# started from the Spark jars Maven resolved (examples/spark-env.sh), so no Spark distribution is needed.
#
#   cluster.sh up K [RATE] [SLOW] [CORES]   the bed (see netbed.sh) and the cluster; CORES per Worker (1),
#                                           or one figure per host (2,1,1: host 1's Worker has 2 cores)
#   cluster.sh down                         stops every process of the cluster and removes the bed
#   cluster.sh submit ARGS...               examples/spark-submit.sh against the cluster, the driver at
#                                           198.18.0.1, executors bound to their host's address
# Logs and pids under examples/target/bed. Needs root (network namespaces) and a built repository
# (mvn -B -q -DskipTests package).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
state=$repo/examples/target/bed
MASTER_HOST=198.18.0.1
MASTER=spark://$MASTER_HOST:7077

start() {
  local k=$1 rate=${2:-1gbit} slow=${3:-0} cores=${4:-1}
  stop
  bash "$here/netbed.sh" up "$k" "$rate" "$slow"
  bash "$here/netbed.sh" check "$k"
  mkdir -p "$state"
  # shellcheck source=/dev/null
  source "$repo/examples/spark-env.sh"
  local java_opts=("${SPARK_JAVA_OPTS[@]}" "-Dlog4j2.configurationFile=$here/log4j2.properties")
  SPARK_LOCAL_IP=$MASTER_HOST nohup java "${java_opts[@]}" -Xmx512m -cp "$SPARK_HOME/jars/*" \
    org.apache.spark.deploy.master.Master --host "$MASTER_HOST" --port 7077 --webui-port 18080 \
    > "$state/master.log" 2>&1 &
  echo $! > "$state/master.pid"
  local per_host
  IFS=, read -r -a per_host <<< "$cores"
  for i in $(seq 1 "$k"); do
    local a="198.18.0.$((10 + i))" c=${per_host[$((i - 1))]:-${per_host[0]}}
    mkdir -p "$state/worker-$i"
    ip netns exec "sc-h$i" env SPARK_HOME="$SPARK_HOME" SPARK_LOCAL_IP="$a" SPARK_SCALA_VERSION="$SPARK_SCALA_VERSION" \
      nohup java "${java_opts[@]}" -Xmx512m -cp "$SPARK_HOME/jars/*" \
      org.apache.spark.deploy.worker.Worker --host "$a" --cores "$c" --memory 2g --webui-port 0 \
      --work-dir "$state/worker-$i/work" "$MASTER" > "$state/worker-$i.log" 2>&1 &
    echo $! > "$state/worker-$i.pid"
  done
  # The Workers register within seconds; wait at most 60 s.
  for _ in $(seq 120); do
    if [ "$(grep -c "Registering worker" "$state/master.log" 2>/dev/null || true)" -ge "$k" ]; then
      echo "cluster: $MASTER with $k workers, cores $cores"
      return 0
    fi
    sleep 0.5
  done
  echo "cluster: not every worker registered within 60 s; master log:" >&2
  tail -n 30 "$state/master.log" >&2
  return 1
}

stop() {
  if [ -d "$state" ]; then
    for p in "$state"/*.pid; do
      [ -f "$p" ] || continue
      local pid
      pid=$(cat "$p")
      # The Worker's executors are its children: stop them with it.
      pkill -TERM -P "$pid" 2>/dev/null || true
      kill -TERM "$pid" 2>/dev/null || true
      rm -f "$p"
    done
    sleep 1
    pkill -KILL -f "$state/worker-" 2>/dev/null || true
  fi
  # Anything still running inside the bed's namespaces (executors of a killed Worker).
  for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^sc-h' || true); do
    for pid in $(ip netns pids "$n" 2>/dev/null); do
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
  bash "$here/netbed.sh" down
}

case "${1:-}" in
  up) shift; start "$@";;
  down) stop;;
  submit)
    shift
    exec bash "$repo/examples/spark-submit.sh" --master "$MASTER" \
      --conf spark.driver.host=$MASTER_HOST --conf spark.driver.bindAddress=$MASTER_HOST "$@";;
  *) sed -n '2,13p' "$0"; exit 2;;
esac
