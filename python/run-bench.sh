#!/usr/bin/env bash
# The PySpark benchmark (python/benchmarks/bench.py): Python tasks' all-reduce against Java tasks' in the same
# run, and against treeAggregate and BarrierTaskContext.allGather from Python. Needs `mvn package` first
# (the plugin jar and benchmarks/target/benchmarks.jar). Writes python/target/bench/report.md.
# Usage: python/run-bench.sh [3|4] [bench.py arguments, e.g. --sizes 1000,1000000 --reps 9]
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/venv.sh" "${1:-3}"
shift || true
exec "$venv/bin/python" "$here/benchmarks/bench.py" "$@"
