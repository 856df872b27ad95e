#!/usr/bin/env bash
# Emulated hosts on this machine: Linux network namespaces joined by veth pairs to a bridge, addresses from
# 198.18.0.0/15 (set aside for network benchmarking), each host's link rate-limited both ways with tbf.
# Nothing leaves the machine: the bridge has no uplink and no route is added outside 198.18.0.0/24.
#
#   netbed.sh up K [RATE] [SLOW]   K hosts sc-h1..sc-hK (198.18.0.11..), RATE per host and direction
#                                  (a tbf queue of QUEUE_MS ms, default 20, in front of each link)
#                                  (tc units, e.g. 1gbit, 10gbit; "none" for no limit), SLOW the number of a
#                                  host at a tenth of RATE (0: none). The root namespace is 198.18.0.1 on the
#                                  bridge (the driver's side). A bed left from an earlier run is removed first.
#   netbed.sh down                 removes every namespace, veth and the bridge of the bed (idempotent)
#   netbed.sh status               what exists of a bed (empty when there is none)
#   netbed.sh exec I CMD...        runs CMD in host I's namespace
#   netbed.sh check K              every host reaches the bridge and every other host, and has its limits
#   netbed.sh link I down|up       takes host I's link down (a partition: packets vanish, no reset) or up
#   netbed.sh rate I RATE          sets host I's link to RATE both ways (e.g. 100mbit: a slow host)
# Needs root, iproute2 (ip, tc) and the kernel's veth, bridge and tbf support.
set -euo pipefail

BRIDGE=scbr0
PREFIX=198.18.0
NS_PREFIX=sc-h

ns() { echo "$NS_PREFIX$1"; }
addr() { echo "$PREFIX.$((10 + $1))"; }

# The token bucket for RATE: a burst of at least 1 ms of traffic and 128 KiB (veth hands over
# segmentation-offloaded packets of up to 64 KiB), a queue of QUEUE_MS (default 20) ms before drops.
limit() {
  local dev=$1 rate=$2 nsname=${3:-}
  local bits burst
  bits=$(rate_bits "$rate")
  burst=$(( bits / 8 / 1000 ))
  [ "$burst" -lt 131072 ] && burst=131072
  local cmd=(tc qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" latency "${QUEUE_MS:-20}ms")
  if [ -n "$nsname" ]; then ip netns exec "$nsname" "${cmd[@]}"; else "${cmd[@]}"; fi
}

# tc rate units to bits per second (kbit, mbit, gbit; bit).
rate_bits() {
  local r=${1,,}
  case "$r" in
    *gbit) echo $(( ${r%gbit} * 1000000000 ));;
    *mbit) echo $(( ${r%mbit} * 1000000 ));;
    *kbit) echo $(( ${r%kbit} * 1000 ));;
    *bit) echo "${r%bit}";;
    *) echo "unknown rate $1" >&2; exit 2;;
  esac
}

tenth() {
  echo "$(( $(rate_bits "$1") / 10 ))bit"
}

down() {
  for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NS_PREFIX" || true); do
    ip netns delete "$n"
  done
  for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$NS_PREFIX" || true); do
    ip link delete "$l" 2>/dev/null || true
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link delete "$BRIDGE"
  fi
}

status() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NS_PREFIX" || true
  ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^($NS_PREFIX|$BRIDGE)" || true
}

up() {
  local k=$1 rate=${2:-1gbit} slow=${3:-0}
  if [ "$k" -lt 1 ] || [ "$k" -gt 200 ]; then
    echo "netbed: from 1 to 200 hosts, not $k" >&2
    exit 2
  fi
  down
  ip link add "$BRIDGE" type bridge
  ip addr add "$PREFIX.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  for i in $(seq 1 "$k"); do
    local n outside
    n=$(ns "$i")
    outside="$n-br"
    ip netns add "$n"
    ip link add "$outside" type veth peer name eth0 netns "$n"
    ip link set "$outside" master "$BRIDGE" up
    ip netns exec "$n" ip link set lo up
    ip netns exec "$n" ip addr add "$(addr "$i")/24" dev eth0
    ip netns exec "$n" ip link set eth0 up
    if [ "$rate" != none ]; then
      local r=$rate
      [ "$i" = "$slow" ] && r=$(tenth "$rate")
      limit eth0 "$r" "$n"       # what the host sends
      limit "$outside" "$r"      # what it receives (the bridge's side of its link)
    fi
  done
  echo "netbed: $k hosts ($(addr 1)..$(addr "$k")), ${rate} per host and direction$( [ "$slow" != 0 ] && echo ", host $slow at a tenth"), bridge $PREFIX.1"
}

# Host I's link: the bridge's side of its veth pair.
link() {
  local i=$1 state=$2
  case "$state" in up|down) ;; *) echo "netbed: link up or down, not $state" >&2; exit 2;; esac
  ip link set "$(ns "$i")-br" "$state"
}

rate() {
  local i=$1 r=$2
  limit eth0 "$r" "$(ns "$i")"
  limit "$(ns "$i")-br" "$r"
}

check() {
  local k=$1 fail=0
  for i in $(seq 1 "$k"); do
    local n
    n=$(ns "$i")
    ip netns exec "$n" ping -c 1 -W 2 "$PREFIX.1" >/dev/null || { echo "host $i cannot reach the bridge"; fail=1; }
    for j in $(seq 1 "$k"); do
      [ "$i" = "$j" ] && continue
      ip netns exec "$n" ping -c 1 -W 2 "$(addr "$j")" >/dev/null || { echo "host $i cannot reach host $j"; fail=1; }
    done
    # Only the bed's own subnet is reachable from a host: no default route.
    if ip netns exec "$n" ip route get 192.0.2.1 >/dev/null 2>&1; then
      echo "host $i has a route outside the bed"
      fail=1
    fi
  done
  return $fail
}

case "${1:-}" in
  up) shift; up "$@";;
  down) down;;
  status) status;;
  exec) shift; i=$1; shift; exec ip netns exec "$(ns "$i")" "$@";;
  check) shift; check "$@" && echo "netbed: $1 hosts reach each other and nothing else";;
  link) shift; link "$@";;
  rate) shift; rate "$@";;
  *) sed -n '2,17p' "$0"; exit 2;;
esac
