#!/bin/bash
# All-reduce algorithms forced one by one on a simulated cluster (issue 4's algorithm figure):
# for each size, each algorithm's out-of-place time and busbw from all_reduce_perf, median of
# several rounds (algorithms interleaved within a round, so drift hits them all alike).
# usage: bench/scripts/netcluster_algos.sh [--build DIR] [--hosts 4] [--per-host 1] [--rate 1gbit]
#            [--rounds 1] [--algos "tree rhd ring direct"] [--sizes "8 64K 4M 64M"]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build hosts=4 per_host=1 rate=1gbit rounds=1 algos="tree rhd ring direct" sizes="8 64K 4M 64M"
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --per-host) per_host=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --algos) algos=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
NC=${NETCLUSTER:-$here/../shared/tools/netcluster}
prefix=nta subnet=10.214.15 port=29900 world=$((hosts * per_host))
work=$(mktemp -d /tmp/coll-nta.XXXXXX)
cleanup() { "$NC" down --prefix $prefix >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
"$NC" up "$hosts" --rate "$rate" --prefix $prefix --subnet $subnet >/dev/null

# Large messages take seconds at 1 Gbit/s: fewer iterations keep a run under a minute.
iters_for() { case $1 in *M|*G) echo "-n 5 -w 1" ;; *) echo "-n 100 -w 10" ;; esac; }

# One all_reduce_perf run at one size; prints "time_us busbw" (out-of-place).
run() { # algo size
  local pids=() k rc=0
  port=$((port + 1))
  for k in $(seq 0 $((world - 1))); do
    # shellcheck disable=SC2046
    timeout 300 "$NC" exec $prefix$((k / per_host)) -- env RANK=$k WORLD_SIZE=$world MASTER_ADDR=$subnet.1 \
      MASTER_PORT=$port COLL_JOB_SECRET=nta-$port COLL_ALGO=allreduce:$1 "$build/bin/all_reduce_perf" \
      -b "$2" -e "$2" $(iters_for "$2") -c 1 -z 2 >"$work/out.$k" 2>&1 &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || rc=$?; done
  [[ $rc == 0 ]] || { echo "run failed ($1, $2)" >&2; cat "$work"/out.* >&2; return 1; }
  awk '$1 ~ /^[0-9]+$/ {print $6, $8; exit}' "$work/out.0"
}

declare -A t b
for r in $(seq "$rounds"); do
  for size in $sizes; do
    for a in $algos; do
      read -r us bw < <(run "$a" "$size")
      t[$a,$size]+="$us " b[$a,$size]+="$bw "
    done
  done
  echo "round $r done" >&2
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "# netcluster $hosts hosts x $per_host ranks at $rate: all-reduce time us / busbw GB/s (median of $rounds)"
printf '%8s' size; for a in $algos; do printf ' %20s' "$a"; done; printf '\n'
for size in $sizes; do
  printf '%8s' "$size"
  for a in $algos; do printf ' %20s' "$(median <<<"${t[$a,$size]}") / $(median <<<"${b[$a,$size]}")"; done
  printf '\n'
done
