#!/bin/bash
# Small all-reduces on a simulated cluster: the automatic choice beside each forced algorithm,
# sizes 8 B .. 4 KiB (issue 4's latency figure), median time of several rounds per size.
# usage: bench/scripts/netcluster_small.sh [--build DIR] [--hosts 4] [--per-host 2] [--rate 1gbit]
#                                          [--rounds 3] [--algos "ring hierarchical direct"]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build hosts=4 per_host=2 rate=1gbit rounds=3 algos="ring hierarchical direct"
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --per-host) per_host=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --algos) algos=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
NC=${NETCLUSTER:-$here/../shared/tools/netcluster}
prefix=ncs subnet=10.214.9 port=29800 world=$((hosts * per_host))
work=$(mktemp -d /tmp/coll-ncs.XXXXXX)
cleanup() { "$NC" down --prefix $prefix >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
"$NC" up "$hosts" --rate "$rate" --prefix $prefix --subnet $subnet >/dev/null

# One all_reduce_perf run over the cluster; prints "size time_us" rows (out-of-place).
run() { # algo ("auto" or a name)
  local pids=() k rc=0 algo_env=()
  port=$((port + 1))
  [[ $1 != auto ]] && algo_env=(COLL_ALGO=allreduce:$1)
  for k in $(seq 0 $((world - 1))); do
    timeout 300 "$NC" exec $prefix$((k / per_host)) -- env RANK=$k WORLD_SIZE=$world MASTER_ADDR=$subnet.1 \
      MASTER_PORT=$port COLL_JOB_SECRET=ncs-$port "${algo_env[@]}" "$build/bin/all_reduce_perf" \
      -b 8 -e 4K -f 2 -n 200 -w 20 -c 1 -z 2 >"$work/out.$k" 2>&1 &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || rc=$?; done
  [[ $rc == 0 ]] || { echo "run failed ($1)" >&2; cat "$work"/out.* >&2; return 1; }
  awk '$1 ~ /^[0-9]+$/ {print $1, $6}' "$work/out.0"
}

declare -A t
for r in $(seq "$rounds"); do
  for a in auto $algos; do
    while read -r size us; do t[$a,$size]+="$us "; done < <(run "$a")
  done
  echo "round $r done" >&2
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "# netcluster $hosts hosts x $per_host ranks at $rate: blocking all-reduce time (us, median of $rounds)"
printf '%8s %10s' size auto; for a in $algos; do printf ' %12s' "$a"; done; printf ' %10s\n' "auto/ring"
for size in 8 16 32 64 128 256 512 1024 2048 4096; do
  auto=$(median <<<"${t[auto,$size]}")
  printf '%8s %10s' "$size" "$auto"
  for a in $algos; do printf ' %12s' "$(median <<<"${t[$a,$size]}")"; done
  ring=$(median <<<"${t[ring,$size]:-}")
  printf ' %10s\n' "$( [[ -n $ring ]] && /usr/bin/python3 -c "print(f'{$auto/$ring:.2f}')" || echo -)"
done
