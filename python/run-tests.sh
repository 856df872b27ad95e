#!/usr/bin/env bash
# The PySpark tests (pytest) on real executor JVMs: a virtualenv with the PySpark of one Spark line (the
# version the Maven build uses), numpy and pytest, this package installed from its folder, and the plugin jar
# that `mvn package` left in spark-plugin/target.
# Usage: python/run-tests.sh [3|4] [pytest arguments]   (3: the default line, 4: the spark-4 profile's)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
line=${1:-3}
shift || true
# The Spark versions of the two lines, as the parent pom states them (default first, then the spark-4 profile).
versions=($(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' "$root/pom.xml"))
case $line in
  3) pyspark=${versions[0]} ;;
  4) pyspark=${versions[1]} ;;
  *) echo "usage: $0 [3|4] [pytest args]" >&2; exit 2 ;;
esac
venv=${VENV_DIR:-$here/target/venv-$pyspark}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "pyspark==$pyspark" numpy pytest pytest-timeout
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps --force-reinstall "$here"
echo "== PySpark $pyspark ($("$venv/bin/python" --version)), plugin $(ls "$root"/spark-plugin/target/spark-collective-spark-*.jar | grep -v original | head -1)"
cd "$here/tests"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
