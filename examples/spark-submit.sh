#!/usr/bin/env bash
# spark-submit without a Spark distribution: runs Spark's own SparkSubmit on the Maven-resolved Spark jars,
# with the spark-collective plugin enabled. Same arguments as spark-submit, e.g.
#   examples/spark-submit.sh --master 'local-cluster[2,2,1024]' examples/target/examples.jar --iterations 100
# The application jar (examples.jar) carries the plugin, so executors get it from the driver.
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/spark-env.sh"
exec java "${SPARK_JAVA_OPTS[@]}" ${SPARK_DRIVER_MEMORY:+-Xmx$SPARK_DRIVER_MEMORY} \
  -cp "$SPARK_HOME/jars/*" org.apache.spark.deploy.SparkSubmit \
  --conf spark.plugins=io.sparkcollective.spark.CollectivePlugin \
  --conf "spark.executor.extraJavaOptions=-Dlog4j2.configurationFile=$repo_dir/conf/log4j2.properties" \
  "$@"
