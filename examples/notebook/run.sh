#!/usr/bin/env bash
# Runs the notebook-style loop (training.jsh) in jshell against an embedded local-cluster: Spark's jars come
# from the Maven build (see ../spark-env.sh). Build first: mvn -B -q -DskipTests package
set -euo pipefail
source "$(cd "$(dirname "$0")/.." && pwd)/spark-env.sh"
jar="$examples_dir/target/examples.jar"
remote_opts=()
for opt in "${SPARK_JAVA_OPTS[@]}"; do
  remote_opts+=("-R$opt")
done
exec jshell --class-path "$(cat "$classpath_file"):$jar" "${remote_opts[@]}" "-R-Dexamples.jar=$jar" \
  "$examples_dir/notebook/training.jsh"
