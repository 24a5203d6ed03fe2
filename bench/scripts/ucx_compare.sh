#!/bin/bash
# The ucx transport's two figures, each beside coll's own transport in the same run,
# interleaved rounds, medians:
#   1. one host, 2 ranks (collrun), all-reduce busbw at 64 MiB: COLL_TRANSPORT=ucx with
#      UCX_TLS=sm,self against COLL_TRANSPORT=shm;
#   2. simulated cluster (netcluster, 4 hosts x 1 rank, 1 Gbit/s links), all-reduce busbw at
#      256 MiB: COLL_TRANSPORT=ucx with UCX_TLS=tcp against the socket transport, and as a
#      fraction of the link rate (0.125 GB/s). Needs root (network namespaces).
#
# usage: bench/scripts/ucx_compare.sh [--build DIR] [--rounds 3] [--skip-local] [--skip-cluster]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build rounds=3 local=1 cluster=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --skip-local) local=0; shift ;;
    --skip-cluster) cluster=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
NC=${NETCLUSTER:-$here/../shared/tools/netcluster}
prefix=nux subnet=10.214.77 port=29700 hosts=4 rate=1gbit
work=$(mktemp -d /tmp/coll-nux.XXXXXX)
cleanup() { [[ $cluster == 1 ]] && "$NC" down --prefix $prefix >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT

row() { awk '$1 ~ /^[0-9]+$/'; }
# busbw from the out-of-place time (column 6, µs); the table rounds busbw to 2 decimals
busbw() { row | awk -v n="$1" '{printf "%.4f", $1/$6/1e3*2*(n-1)/n}'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ratio() { /usr/bin/python3 -c "print(f'{$1/$2:.3f}')"; }

local_figure() {
  local ucx=() shm=() r perf=(-b 64M -e 64M -n 10 -w 3 -c 1)
  for r in $(seq "$rounds"); do
    ucx+=("$(COLL_TRANSPORT=ucx UCX_TLS=sm,self "$build/bin/collrun" -n 2 "$build/bin/all_reduce_perf" "${perf[@]}" | sed 's/^\[[0-9]*\] *//' | busbw 2)")
    shm+=("$(COLL_TRANSPORT=shm "$build/bin/collrun" -n 2 "$build/bin/all_reduce_perf" "${perf[@]}" | sed 's/^\[[0-9]*\] *//' | busbw 2)")
    echo "local round $r: ucx ${ucx[-1]} shm ${shm[-1]}" >&2
  done
  local u s
  u=$(median <<<"${ucx[*]}") s=$(median <<<"${shm[*]}")
  echo "# one host, 2 ranks, all-reduce float32 64 MiB, busbw (GB/s), median of $rounds"
  printf '%-44s %8s %8s %8s\n' "measure" "ucx" "shm" "ratio"
  printf '%-44s %8s %8s %8s\n' "ucx (UCX_TLS=sm,self) vs coll shm" "$u" "$s" "$(ratio "$u" "$s")"
}

addr() { echo "$subnet.$(($1 + 1))"; }
# Runs "$@" as 4 ranks, rank k on host k, torch-style environment; prints rank 0's output.
run_cluster() {
  local pids=() k rc=0
  port=$((port + 1))
  for k in $(seq 0 $((hosts - 1))); do
    timeout 600 "$NC" exec $prefix$k -- env RANK=$k WORLD_SIZE=$hosts LOCAL_RANK=0 MASTER_ADDR="$(addr 0)" \
      MASTER_PORT=$port COLL_JOB_SECRET=nux-$port "$@" >"$work/out.$k" 2>&1 &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || rc=$?; done
  [[ $rc == 0 ]] || { echo "run failed ($rc): $*" >&2; cat "$work"/out.* >&2; return 1; }
  cat "$work/out.0"
}

cluster_figure() {
  "$NC" up $hosts --rate $rate --prefix $prefix --subnet $subnet >/dev/null
  local ucx=() sock=() r perf=(-b 256M -e 256M -n 3 -w 1 -c 1)
  for r in $(seq "$rounds"); do
    ucx+=("$(run_cluster env COLL_TRANSPORT=ucx UCX_TLS=tcp UCX_NET_DEVICES=eth0 "$build/bin/all_reduce_perf" "${perf[@]}" | busbw $hosts)")
    sock+=("$(run_cluster env COLL_TRANSPORT=socket "$build/bin/all_reduce_perf" "${perf[@]}" | busbw $hosts)")
    echo "cluster round $r: ucx ${ucx[-1]} socket ${sock[-1]}" >&2
  done
  local u s link=0.125
  u=$(median <<<"${ucx[*]}") s=$(median <<<"${sock[*]}")
  echo "# netcluster $hosts hosts x 1 rank at $rate (link rate $link GB/s), all-reduce float32 256 MiB, busbw (GB/s), median of $rounds"
  printf '%-44s %8s %8s %8s\n' "measure" "ucx" "socket" "ratio"
  printf '%-44s %8s %8s %8s\n' "ucx (UCX_TLS=tcp) vs coll socket" "$u" "$s" "$(ratio "$u" "$s")"
  printf '%-44s %8s %8s\n' "busbw / link rate" "$(ratio "$u" $link)" "$(ratio "$s" $link)"
}

[[ $local == 1 ]] && local_figure
[[ $cluster == 1 ]] && cluster_figure
exit 0
