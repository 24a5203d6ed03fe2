#!/usr/bin/env bash
# torchrun's elastic restart across simulated hosts with backend "coll": torchrun --nnodes HOSTS
# --nproc_per_node PER_HOST --rdzv_backend c10d --max_restarts 1 on every host, running
# bindings/python/tests/elastic_train.py (DDP, a checkpoint per step). The last rank (on the last
# host) kills itself before step 3; its agent restarts its workers, the other agents see a node
# waiting and restart theirs, every worker re-initialises coll in the new round and resumes from
# the checkpoint. Passes when every torchrun exits 0 and elastic_train.py --check finds every
# rank's parameters equal to one process running the same global batches.
#
#   torch_elastic_hosts.sh BINDIR [HOSTS] [PER_HOST]        (default 2 x 2)
# Root only (network namespaces): exit 77 otherwise, or without torch. Its own netcluster
# (prefix nte, subnet 10.214.32), always torn down; every command bounded by `timeout`.
set -u
bindir=${1:?bindir}
hosts=${2:-2} per=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
nc=${NETCLUSTER:-$here/../../../shared/tools/netcluster}
[[ -x $nc ]] || nc=/work/shared/tools/netcluster
script=$here/../../bindings/python/tests/elastic_train.py
prefix=nte subnet=10.214.32 port=29660 steps=6 kill_step=3
n=$((hosts * per))
[[ $EUID -eq 0 ]] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
[[ -x /usr/bin/torchrun ]] || { echo "SKIP: /usr/bin/torchrun is not installed (python3-torch)"; exit 77; }
PYTHONPATH="$bindir/../python" /usr/bin/python3 -c "import coll.torch" 2>/dev/null ||
  { echo "SKIP: coll.torch is not built (libtorch-dev missing)"; exit 77; }
out=$(mktemp -d "${TMPDIR:-/tmp}/coll-elastic.XXXXXX")
pids=()
trap '[[ ${#pids[@]} -gt 0 ]] && kill "${pids[@]}" 2>/dev/null; timeout 60 "$nc" down --prefix $prefix >/dev/null 2>&1; rm -rf "$out"' EXIT
timeout 60 "$nc" up "$hosts" --prefix $prefix --subnet $subnet >/dev/null || { echo "FAIL: netcluster up"; exit 1; }

# torch 1.13's agent picks each round's MASTER_PORT by binding port 0 on localhost and closing it;
# rank 0's TCPStore then binds that port on every address, which fails (errno 98) when a socket
# on the host's own address holds it meanwhile (torch's race, not coll's). Such a launch is run
# once more, on fresh ports and a fresh folder; any other failure is reported at once.
launch() { # try -> rcs, took, run (the try's folder)
  run=$out/try$1
  mkdir -p "$run"
  local k p rdzv=$((port + 2 * $1)) start
  start=$(date +%s)
  for ((k = 0; k < hosts; k++)); do
    timeout -k 5 240 "$nc" exec $prefix$k -- env PYTHONPATH="$bindir/../python" OMP_NUM_THREADS=1 /usr/bin/torchrun \
      --nnodes "$hosts" --nproc_per_node "$per" --rdzv_backend c10d --rdzv_endpoint "${prefix}0:$rdzv" \
      --rdzv_id elastic$rdzv --max_restarts 1 --monitor_interval 1 --redirects 1 --tee 1 \
      "$script" "$run" $steps $kill_step $((n - 1)) >"$run/host$k.log" 2>&1 &
    pids+=($!)
  done
  rcs=()
  for p in "${pids[@]}"; do wait "$p"; rcs+=($?); done
  pids=()  # all waited for: none left for the trap
  took=$(($(date +%s) - start))
}
launch 0
if ! [[ ${rcs[*]} =~ ^(0 )*0$ ]] && grep -q "server socket has failed to bind.*errno: 98" "$run"/host*.log; then
  echo "torch's agent handed rank 0 a MASTER_PORT already in use (errno 98); launching once more"
  launch 1
fi
show() { for ((k = 0; k < hosts; k++)); do echo "--- host $k (torchrun exit ${rcs[k]})"; grep -v '^\s*$' "$run/host$k.log" | tail -40; done; }
[[ -n ${ELASTIC_SHOW:-} ]] && show
if ! [[ ${rcs[*]} =~ ^(0 )*0$ ]]; then
  show
  echo "FAIL: torchrun exit statuses ${rcs[*]} ($took s)"
  exit 1
fi
if ! PYTHONPATH="$bindir/../python" /usr/bin/python3 "$script" --check "$run" $n $steps $kill_step; then
  show
  echo "FAIL: the restarted group's parameters ($took s)"
  exit 1
fi
grep -ho "elastic rank [0-9]* done: .*" "$run"/host*.log | sed 's/^\[default[0-9]*\]://' | sort
echo "PASS: $hosts hosts x $per ranks, rank $((n - 1)) killed before step $kill_step, the group restarted and trained on ($took s)"
