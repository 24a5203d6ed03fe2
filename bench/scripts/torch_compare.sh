#!/bin/bash
# torch.distributed with backend "coll" beside backend "gloo", in the same run, interleaved,
# several rounds, medians: all_reduce of a 64 MiB float32 tensor (busbw, nccl-tests'
# definition) and, with --ddp, the DistributedDataParallel step time of a 29 M-parameter MLP.
#
#   bench/scripts/torch_compare.sh --ranks 4                  # one host, 4 processes
#   bench/scripts/torch_compare.sh --hosts 4 --ddp            # netcluster 4 hosts x 1 at 1gbit (root)
#   bench/scripts/torch_compare.sh --hosts 2 --per-host 2 --ddp --batch 2
#
# usage: torch_compare.sh [--build DIR] [--ranks N | --hosts H [--per-host P]] [--rate 1gbit]
#                         [--rounds 3] [--size 64M] [--ddp] [--batch B] [--steps S]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build ranks=4 hosts=0 per=1 rate=1gbit rounds=3 size=64M ddp=0 batch=32 steps=5
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --per-host) per=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --ddp) ddp=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $hosts -gt 0 ]] && ranks=$((hosts * per))
[[ -f $build/python/coll/torch.py ]] || { echo "no $build/python/coll: build with libtorch-dev installed" >&2; exit 2; }
NC=${NETCLUSTER:-$here/../shared/tools/netcluster}
prefix=ntc subnet=10.214.9 port=29700
work=$(mktemp -d /tmp/coll-ntc.XXXXXX)
cleanup() { [[ $hosts -gt 0 ]] && "$NC" down --prefix $prefix >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
if [[ $hosts -gt 0 ]]; then
  "$NC" up "$hosts" --rate "$rate" --prefix $prefix --subnet $subnet >/dev/null
  master=$subnet.1
else
  master=127.0.0.1
fi

# Runs "$@" as $ranks torch processes (rank k on host k / per with --hosts); prints rank 0's output.
launch() {
  local pids=() k rc=0 on=()
  port=$((port + 1))
  for k in $(seq 0 $((ranks - 1))); do
    [[ $hosts -gt 0 ]] && on=("$NC" exec $prefix$((k / per)) --)
    timeout 600 "${on[@]}" env RANK=$k WORLD_SIZE=$ranks LOCAL_RANK=$((k % per)) MASTER_ADDR=$master MASTER_PORT=$port \
      PYTHONPATH="$build/python" OMP_NUM_THREADS=1 /usr/bin/python3 "$@" >"$work/out.$k" 2>&1 &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || rc=$?; done
  [[ $rc == 0 ]] || { echo "run failed ($rc): $*" >&2; cat "$work"/out.* >&2; return 1; }
  cat "$work/out.0"
}

field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
declare -A results
for r in $(seq "$rounds"); do
  for backend in coll gloo; do
    results[ar_$backend]+="$(launch "$here/bench/peers/torch_dist_perf.py" --backend $backend -b "$size" -e "$size" \
      -n 5 -w 2 | awk '$1 ~ /^[0-9]+$/ {print $4}') "
    if [[ $ddp == 1 ]]; then
      line=$(launch "$here/bench/torch_ddp_step.py" --backend $backend --steps "$steps" --warmup 2 --batch "$batch")
      results[ddp_$backend]+="$(field step_ms <<<"$line") "
      results[fwd_$backend]+="$(field forward_ms <<<"$line") "
    fi
  done
  echo "round $r done" >&2
done

med() { tr ' ' '\n' <<<"${results[$1]}" | grep . | median; }
ratio() { /usr/bin/python3 -c "print(f'{$1/$2:.3f}')"; }
where="one host, $ranks processes"
[[ $hosts -gt 0 ]] && where="netcluster $hosts hosts x $per processes at $rate"
echo "# torch.distributed, $where, $rounds rounds, medians"
printf '%-40s %10s %10s %8s\n' "measure" "coll" "gloo" "coll/gloo"
c=$(med ar_coll) g=$(med ar_gloo)
printf '%-40s %10s %10s %8s\n' "all_reduce $size float32 busbw (GB/s)" "$c" "$g" "$(ratio "$c" "$g")"
if [[ $ddp == 1 ]]; then
  c=$(med ddp_coll) g=$(med ddp_gloo)
  printf '%-40s %10s %10s %8s\n' "DDP step, 29M-param MLP, batch $batch (ms)" "$c" "$g" "$(ratio "$c" "$g")"
  c=$(med fwd_coll) g=$(med fwd_gloo)
  printf '%-40s %10s %10s %8s\n' "  of it the forward pass (ms)" "$c" "$g" "$(ratio "$c" "$g")"
fi
for k in "${!results[@]}"; do echo "# $k, each round: ${results[$k]}"; done | sort
