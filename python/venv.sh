# Sourced by run-tests.sh and run-bench.sh: sets $venv to a virtualenv with the PySpark of Spark line $1 (3: the
# default, 4: the spark-4 profile's; versions as pom.xml states them), numpy, pandas and pyarrow (DataFrame
# barrier UDFs), pytest, and this package installed from its folder; $root is the repository.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
versions=($(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' "$root/pom.xml"))
case ${1:-3} in
  3) pyspark=${versions[0]} ;;
  4) pyspark=${versions[1]} ;;
  *) echo "Spark line ${1}: 3 or 4" >&2; exit 2 ;;
esac
venv=${VENV_DIR:-$here/target/venv-$pyspark}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# The examples' needs (charts, the notebook's kernel) only on the default line, where their tests run.
extras=$([ "${1:-3}" = 3 ] && echo "matplotlib nbclient nbformat ipykernel" || true)
"$venv/bin/pip" install -q --disable-pip-version-check "pyspark==$pyspark" numpy pandas pyarrow pytest pytest-timeout \
  $extras
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps --force-reinstall "$here"
