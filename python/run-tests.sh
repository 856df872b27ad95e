#!/usr/bin/env bash
# The PySpark tests (pytest) on real executor JVMs, against the plugin jar that `mvn package` left in
# spark-plugin/target (see venv.sh for the environment).
# Usage: python/run-tests.sh [3|4] [pytest arguments]   (3: the default Spark line, 4: the spark-4 profile's)
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/venv.sh" "${1:-3}"
shift || true
echo "== PySpark $pyspark ($("$venv/bin/python" --version)), plugin $(ls "$root"/spark-plugin/target/spark-collective-spark-*.jar | grep -v original | head -1)"
cd "$here/tests"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
