#!/bin/bash
# Two builds of coll side by side in one run: all_reduce_perf on this host through collrun and
# on a simulated 2 x 2 cluster (netcluster), the builds interleaved within each round so the
# machine's drift hits both alike. For changes that must not move performance (a refactor).
# usage: bench/scripts/build_compare.sh --a DIR --b DIR [--rounds 3] [--ranks 4]
#            [--sizes "8 64K 4M 64M"] [--rate 1gbit] [--no-cluster] [--b-env "VAR=VALUE ..."]
# --b-env sets variables for b's runs only: one build against itself with a mode switched on,
# e.g. --a build --b build --b-env COLL_DETERMINISTIC=1.
# Prints, per setup and size, the median out-of-place time (µs) and busbw (GB/s) of each build
# and a_us / b_us (above 1: b is faster).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
a= b= rounds=3 ranks=4 sizes="8 64K 4M 64M" rate=1gbit cluster=1 b_env=
while [[ $# -gt 0 ]]; do
  case $1 in
    --a) a=$(cd "$2" && pwd); shift 2 ;;
    --b) b=$(cd "$2" && pwd); shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --no-cluster) cluster=0; shift ;;
    --b-env) b_env=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -n $a && -n $b ]] || { echo "usage: $0 --a BUILD_DIR --b BUILD_DIR" >&2; exit 2; }
NC=${NETCLUSTER:-$here/../shared/tools/netcluster}
prefix=nbc subnet=10.214.17 port=30100
work=$(mktemp -d /tmp/coll-nbc.XXXXXX)
cleanup() { [[ $cluster == 1 ]] && "$NC" down --prefix $prefix >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
[[ $cluster == 1 ]] && "$NC" up 2 --rate "$rate" --prefix $prefix --subnet $subnet >/dev/null

iters_for() { case $1 in *M|*G) echo "-n 5 -w 1" ;; *) echo "-n 100 -w 10" ;; esac; }
# The first table row of rank 0 (collrun prefixes each line with "[rank]"): time and busbw.
first_row() {
  awk '$1 ~ /^\[[0-9]+\]$/ { if ($1 != "[0]") next; $1 = ""; $0 = $0 }
       $1 ~ /^[0-9]+$/ { print $6, $8; exit }' "$1"
}

local_run() { # build size [VAR=VALUE ...] -> "us busbw"
  # shellcheck disable=SC2086
  timeout 300 env ${3:-} "$1/bin/collrun" -n "$ranks" "$1/bin/all_reduce_perf" -b "$2" -e "$2" $(iters_for "$2") -c 1 \
    >"$work/local.out" 2>&1 || { cat "$work/local.out" >&2; return 1; }
  first_row "$work/local.out"
}

cluster_run() { # build size [VAR=VALUE ...] -> "us busbw" on 2 hosts x 2 ranks
  local pids=() k rc=0
  port=$((port + 1))
  for k in 0 1 2 3; do
    # shellcheck disable=SC2046
    timeout 300 "$NC" exec $prefix$((k / 2)) -- env RANK=$k WORLD_SIZE=4 MASTER_ADDR=$subnet.1 \
      MASTER_PORT=$port COLL_JOB_SECRET=nbc-$port ${3:-} "$1/bin/all_reduce_perf" \
      -b "$2" -e "$2" $(iters_for "$2") -c 1 >"$work/out.$k" 2>&1 &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || rc=$?; done
  [[ $rc == 0 ]] || { cat "$work"/out.* >&2; return 1; }
  first_row "$work/out.0"
}

declare -A t bw
setups=local; [[ $cluster == 1 ]] && setups="local cluster"
for r in $(seq "$rounds"); do
  for setup in $setups; do
    for size in $sizes; do
      for build in a b; do
        extra=; [[ $build == b ]] && extra=$b_env
        read -r us g < <(${setup}_run "${!build}" "$size" "$extra")
        t[$setup,$size,$build]+="$us " bw[$setup,$size,$build]+="$g "
      done
    done
  done
  echo "round $r of $rounds done" >&2
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
echo "# a = $a"
echo "# b = $b${b_env:+ with $b_env}"
echo "# all_reduce_perf out of place, median of $rounds interleaved rounds: local = $ranks ranks on this host" \
     "(collrun); cluster = netcluster 2 hosts x 2 ranks at $rate"
printf '%-8s %8s %12s %12s %10s %10s %9s\n' setup size a_us b_us a_busbw b_busbw a_us/b_us
for setup in $setups; do
  for size in $sizes; do
    ta=$(median <<<"${t[$setup,$size,a]}") tb=$(median <<<"${t[$setup,$size,b]}")
    ga=$(median <<<"${bw[$setup,$size,a]}") gb=$(median <<<"${bw[$setup,$size,b]}")
    ratio=$(awk -v x="$ta" -v y="$tb" 'BEGIN {printf (y > 0) ? "%.2f" : "-", x / y}')
    printf '%-8s %8s %12s %12s %10s %10s %9s\n' "$setup" "$size" "$ta" "$tb" "$ga" "$gb" "$ratio"
  done
done
