# Sourced by spark-submit.sh and notebook/run.sh: a SPARK_HOME made of the Maven-resolved Spark jars, so
# that local-cluster executors (and spark-submit) work without a Spark distribution.
examples_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_dir="$(dirname "$examples_dir")"
classpath_file="$examples_dir/target/spark-classpath.txt"
if [ ! -f "$classpath_file" ] || [ ! -f "$examples_dir/target/examples.jar" ]; then
  echo "Spark's classpath is not there yet: build first with  mvn -B -q -DskipTests package" >&2
  exit 1
fi
export SPARK_HOME="$examples_dir/target/spark-home"
rm -rf "$SPARK_HOME/jars"
mkdir -p "$SPARK_HOME/jars"
IFS=":" read -r -a spark_jars < "$classpath_file" || true  # no newline at the end
for jar in "${spark_jars[@]}"; do
  ln -s "$jar" "$SPARK_HOME/jars/$(basename "$jar")"
done
scala_library="$(basename "$SPARK_HOME"/jars/scala-library-*.jar)"
case "$scala_library" in
  scala-library-2.13*) export SPARK_SCALA_VERSION=2.13 ;;
  *) export SPARK_SCALA_VERSION=2.12 ;;
esac
# The module openings Spark's own launcher adds on Java 17.
SPARK_JAVA_OPTS=(
  --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.invoke=ALL-UNNAMED
  --add-opens=java.base/java.lang.reflect=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED
  --add-opens=java.base/java.net=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
  --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens=java.base/sun.nio.cs=ALL-UNNAMED --add-opens=java.base/sun.security.action=ALL-UNNAMED
  --add-opens=java.base/sun.util.calendar=ALL-UNNAMED
  -Djdk.reflect.useDirectMethodHandle=false -Dio.netty.tryReflectionSetAccessible=true
  "-Dlog4j2.configurationFile=$repo_dir/conf/log4j2.properties"
)
