#!/usr/bin/env bash
# Where the CPU goes during an all-reduce across emulated hosts (netbed.sh): K hosts at RATE, one
# TcpSweepWorker per host all-reducing SIZE bytes for SECONDS, Java Flight Recorder on host 1's rank, and the
# machine's CPU time split (user, system, softirq: the kernel's veth, bridge and tbf work) over the run.
# Prints the split, busbw, and the hottest methods of host 1's rank (top frames of JFR's execution samples,
# threads of the library named), and leaves the recording in OUT.
#
#   profile.sh [K] [RATE] [SIZE] [SECONDS]        default 4 hosts, 10gbit, 16777216 bytes, 20 s
# Needs root and a built repository (mvn -B -q -DskipTests package).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
jar=$repo/benchmarks/target/benchmarks.jar
k=${1:-4}
rate=${2:-10gbit}
size=${3:-16777216}
seconds=${4:-20}
out=${OUT:-$repo/benchmarks/target/bed-profile}
[ -f "$jar" ] || { echo "profile: build first (mvn -B -q -DskipTests package)" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out"
trap 'bash "$here/netbed.sh" down >/dev/null 2>&1 || true' EXIT
bash "$here/netbed.sh" up "$k" "$rate" > /dev/null

addr() { echo "198.18.0.$((10 + $1))"; }
# CPU ticks of the whole machine: user+nice, system, softirq, idle+iowait.
ticks() { awk '/^cpu / {print $2 + $3, $4, $8, $5 + $6}' /proc/stat; }

peers=""
for i in $(seq 1 "$k"); do peers+="${peers:+,}$(addr "$i"):7400"; done
secret=$(head -c 24 /dev/urandom | base64)
# Enough repetitions of ~SECONDS/7 each; the recording covers the sweep after the warm-up.
before=$(ticks)
pids=()
for i in $(seq 1 "$k"); do
  jfr=()
  [ "$i" = 1 ] && jfr=("-XX:StartFlightRecording=filename=$out/rank-1.jfr,settings=profile,delay=5s")
  ip netns exec "sc-h$i" env SPARK_COLLECTIVE_SECRET="$secret" java -Xms1g -Xmx2g -XX:+UseParallelGC "${jfr[@]}" \
    -cp "$jar" io.sparkcollective.benchmarks.TcpSweepWorker --rank $((i - 1)) --peers "$peers" \
    --sizes "$size" --reps 7 --target "$(awk -v s="$seconds" 'BEGIN {print s / 7}')" --warmup-ops 2000 \
    > "$out/rank-$i.log" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
after=$(ticks)
[ $rc -eq 0 ] || { cat "$out"/rank-*.log >&2; exit $rc; }
grep -v ' INFO ' "$out/rank-1.log"
read -r u0 s0 q0 i0 <<< "$before"
read -r u1 s1 q1 i1 <<< "$after"
awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v q=$((q1 - q0)) -v i=$((i1 - i0)) 'BEGIN {
  t = u + s + q + i; printf "CPU of the machine over the run: user %.0f%%, system %.0f%%, softirq %.0f%%, idle %.0f%%\n",
  100 * u / t, 100 * s / t, 100 * q / t, 100 * i / t }'
echo "Hottest methods of host 1's rank (share of JFR execution samples, top frame):"
jfr print --events jdk.ExecutionSample --stack-depth 1 "$out/rank-1.jfr" \
  | awk '/stackTrace = \[/ {getline; sub(/^[ \t]+/, ""); sub(/line:.*/, ""); n[$0]++; total++}
         END {for (f in n) printf "%6.1f%%  %s\n", 100 * n[f] / total, f}' | sort -rn | head -n 20
echo "recording: $out/rank-1.jfr"
