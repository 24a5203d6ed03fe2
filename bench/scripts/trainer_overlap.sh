#!/bin/bash
# The trainer's overlap on a simulated cluster: 4 hosts x 1 rank at 1 Gbit/s (shaped links),
# build/bin/trainer_overlap comparing one all-reduce after backward ("single") with bucketed
# all-reduces overlapping backward, in the same run on the same model. Needs root (network
# namespaces). Brings its own cluster (prefix ntr, subnet 10.77.0) up and always down.
#
# usage: bench/scripts/trainer_overlap.sh [--build DIR] [--hosts 4] [--rate 1gbit] [--mtu 1500] [--trace PREFIX]
#                                         [--program trainer_overlap|coll-train]
#                                         [-- the program's options, e.g. --batch 32 --modes single,auto]
# --program coll-train runs coll-train instead (one configuration per run, e.g. -- --task teacher
# --width 768 --layers 12 --batch 64 --device-gflops 1.25 --auto-buckets, then again with
# --no-overlap); --trace then names coll-train's trace file.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build hosts=4 rate=1gbit mtu=1500 trace= extra=() program=trainer_overlap
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --mtu) mtu=$2; shift 2 ;;
    --trace) trace=$(realpath -m "$2"); shift 2 ;;
    --program) program=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
NC=${NETCLUSTER:-$here/../shared/tools/netcluster}
[[ -x $NC ]] || NC=/work/shared/tools/netcluster
prefix=ntr subnet=10.77.0 port=29700
work=$(mktemp -d /tmp/coll-ntr.XXXXXX)
cleanup() { "$NC" down --prefix $prefix >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
"$NC" up "$hosts" --rate "$rate" --mtu "$mtu" --prefix $prefix --subnet $subnet >/dev/null

args=("${extra[@]}")
[[ -n $trace ]] && args+=(--trace "$trace")
pids=()
for k in $(seq 0 $((hosts - 1))); do
  timeout 900 "$NC" exec $prefix$k -- env RANK=$k WORLD_SIZE=$hosts LOCAL_RANK=0 MASTER_ADDR=$subnet.1 \
    MASTER_PORT=$port COLL_JOB_SECRET=ntr-$port "$build/bin/$program" "${args[@]}" >"$work/out.$k" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
if [[ $rc != 0 ]]; then echo "$program failed ($rc)" >&2; cat "$work"/out.* >&2; exit 1; fi
echo "# netcluster $hosts hosts x 1 rank at $rate, MTU $mtu"
cat "$work/out.0"
