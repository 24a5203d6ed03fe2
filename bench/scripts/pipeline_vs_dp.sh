#!/bin/bash
# PipeDream's claim, measured: on a simulated cluster of 4 hosts x 1 rank (shaped links), the
# same model trained as D = 4 data parallelism (gradients all-reduced in buckets, overlapping
# backward) and as a P = 4 pipeline (1F1B and GPipe, activations and gradients between
# neighbouring stages), at a range of global batch sizes. The parameters (and so the gradients DP moves)
# stay the same while the activations the pipeline moves grow with the batch, so small
# batches favour the pipeline and large ones data parallelism; the table shows where the
# step times cross. Layers are device-timed (--device-gflops): compute takes the time a
# device would, so the CPUs serve only the communication. Needs root (network namespaces);
# brings its own cluster (prefix npd, subnet 10.76.0) up and always down.
#
# usage: bench/scripts/pipeline_vs_dp.sh [--build DIR] [--rate 1gbit] [--batches "64 256 1024 4096 16384"]
#                                        [--width 512] [--layers 9] [--gflops 50] [--micro 16] [--steps 6]
#                                        [--out FILE.csv]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build rate=1gbit batches="64 256 1024 4096 16384" width=512 layers=9 gflops=50 micro=16 steps=6 out=
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --layers) layers=$2; shift 2 ;;
    --gflops) gflops=$2; shift 2 ;;
    --micro) micro=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
NC=${NETCLUSTER:-$here/../shared/tools/netcluster}
[[ -x $NC ]] || NC=/work/shared/tools/netcluster
hosts=4 prefix=npd subnet=10.76.0 port=29750
work=$(mktemp -d /tmp/coll-npd.XXXXXX)
cleanup() { "$NC" down --prefix $prefix >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
"$NC" up $hosts --rate "$rate" --prefix $prefix --subnet $subnet >/dev/null

# run NAME ARGS...: coll-train on every host; prints rank 0's median step in ms.
run() {
  local name=$1 pids=() rc=0
  shift
  port=$((port + 1))
  for k in $(seq 0 $((hosts - 1))); do
    timeout 600 "$NC" exec $prefix$k -- env RANK=$k WORLD_SIZE=$hosts LOCAL_RANK=0 MASTER_ADDR=$subnet.1 \
      MASTER_PORT=$port COLL_JOB_SECRET=npd-$port "$build/bin/coll-train" "$@" >"$work/$name.$k" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  if [[ $rc != 0 ]]; then echo "$name failed ($rc)" >&2; cat "$work/$name".* >&2; exit 1; fi
  grep -o "median step [0-9.]* ms" "$work/$name.0" | awk '{print $3}'
}

params=$(( (layers - 1) * (width * width + width) + width * 10 + 10 ))
echo "# netcluster $hosts hosts x 1 rank at $rate; teacher task, $layers dense layers of $width" \
     "($params parameters, $((params * 4 / 1048576)) MiB of gradients), device-timed at $gflops GFLOP/s"
echo "# data parallel: D = 4, bucketed all-reduce overlapping backward; pipeline: P = 4, M = $micro"
printf "%8s %16s %12s %12s %12s %10s %s\n" batch "act MiB/boundary" "dp ms" "1f1b ms" "gpipe ms" "best/dp" faster
[[ -n $out ]] && echo "batch,activation_mib,dp_step_ms,1f1b_step_ms,gpipe_step_ms" >"$out"
for b in $batches; do
  examples=$(( b * steps > 4096 ? b * steps : 4096 ))
  common=(--task teacher --width "$width" --layers "$layers" --examples "$examples" --batch "$b" --epochs 1
          --steps "$steps" --device-gflops "$gflops" --optimizer sgd)
  dp=$(run dp$b "${common[@]}")
  f1b=$(run 1f1b$b "${common[@]}" --stages 4 --micro-batches "$micro" --schedule 1f1b)
  gpipe=$(run gpipe$b "${common[@]}" --stages 4 --micro-batches "$micro" --schedule gpipe)
  act=$(awk -v b="$b" -v w="$width" 'BEGIN{printf "%.2f", 2 * b * w * 4 / 1048576}')  # forward + backward
  ratio=$(awk -v a="$f1b" -v g="$gpipe" -v d="$dp" 'BEGIN{printf "%.2f", (a < g ? a : g) / d}')
  faster=$(awk -v r="$ratio" 'BEGIN{print (r < 1 ? "pipeline" : "data parallel")}')
  printf "%8s %16s %12s %12s %12s %10s %s\n" "$b" "$act" "$dp" "$f1b" "$gpipe" "$ratio" "$faster"
  [[ -n $out ]] && echo "$b,$act,$dp,$f1b,$gpipe" >>"$out"
done
