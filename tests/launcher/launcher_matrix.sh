#!/usr/bin/env bash
# The launcher matrix across simulated hosts: each launcher a cluster runs starts all_reduce_perf
# -c 1 over {4 hosts x 1 rank, 2 hosts x 2 ranks} with no coll variable set but COLL_DEBUG:
#   slurm       srun --mpi=pmix on a real Slurm (slurm_cluster.sh): the store through PMIx
#   slurm-none  srun --mpi=none: the store on the step's first node, port from the job id
#   sbatch      an sbatch script (slurm_batch.sh) that calls srun (MpiDefault: pmix if Slurm has it)
#   openmpi     mpirun.openmpi over `netcluster rsh`: the store through PMIx
#   mpich       mpirun.mpich (Hydra) over `netcluster rsh`: the store through PMI-1
#   torchrun    torchrun --rdzv_backend c10d on every host (--no_python): the store at the
#               MASTER_ADDR/MASTER_PORT torchrun's rendezvous hands the workers
#   torchrun-py the same with tests/launcher/torch_hosts.py, a torch script using backend
#               "coll" (all_reduce, all_gather_object, two DDP steps): the store torch hands it;
#               on 2 hosts x 2 only unless MATRIX_TORCH_SHAPES says otherwise (its start-up,
#               four Pythons importing torch on 2 cores, costs ~10 s a run)
# coll-doctor also starts on 2 hosts x 2 under one launcher of each rendezvous path (srun with
# PMIx, MPICH's PMI-1, torchrun's c10d; MATRIX_DOCTOR_LAUNCHERS names others, MATRIX_DOCTOR=0
# none) and must exit 0 with "verdict: OK" after 8 of 8 probes between hosts.
# Each run must exit 0 with "Out of bounds values : 0 OK", every rank must name the launcher and
# the path it took, and every rank's "transports:" line must reach the ranks of its own host
# through shm and the others through a network transport (hosts from the table's "Rank r ... on
# HOST" lines). Prints one line per run with the busbw all_reduce_perf printed.
#
#   launcher_matrix.sh BINDIR PMIX(ON|OFF) [LAUNCHER...]     (default: all of them)
#   MATRIX_SHAPES="4x1 2x2" MATRIX_PERF="-b 8 -e 1M -f 32 -c 1 -n 5 -w 1" MATRIX_RATE=1gbit
#
# Root only (network namespaces): exit 77 otherwise. A launcher that is not installed (Slurm and
# munge, Open MPI, MPICH) or that this build cannot serve (Open MPI across hosts without PMIx) is
# skipped and named; exit 77 when nothing ran. Its own netcluster (prefix ntl, subnet
# 10.214.26), always torn down; every command bounded by `timeout`.
set -u
bindir=${1:?bindir}
have_pmix=${2:?PMIX ON or OFF}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
nc=${NETCLUSTER:-$here/../../../shared/tools/netcluster}
[[ -x $nc ]] || nc=/work/shared/tools/netcluster
prefix=ntl subnet=10.214.26
launchers=("$@")
[[ ${#launchers[@]} -gt 0 ]] || launchers=(slurm slurm-none sbatch openmpi mpich torchrun torchrun-py)
read -r -a torch_shapes <<<"${MATRIX_TORCH_SHAPES:-2x2}"
read -r -a shapes <<<"${MATRIX_SHAPES:-4x1 2x2}"
read -r -a perf <<<"${MATRIX_PERF:--b 8 -e 1M -f 32 -c 1 -n 5 -w 1}"
perf=("$bindir/all_reduce_perf" "${perf[@]}")
limit=${MATRIX_RUN_TIMEOUT:-60}
export COLL_TIMEOUT=${COLL_TIMEOUT:-30} COLL_DEBUG=INFO COLL_DEBUG_SUBSYS=INIT,NET,STORE

[[ $EUID -eq 0 ]] || { echo "SKIP: the launcher matrix needs root (network namespaces, slurmd)"; exit 77; }
[[ -x $nc ]] || { echo "SKIP: no netcluster at $nc"; exit 77; }
out=$(mktemp -d "${TMPDIR:-/tmp}/coll-launchers.XXXXXX")
slurm_up=0
cleanup() {
  [[ $slurm_up == 1 ]] && timeout 60 "$here/slurm_cluster.sh" down --prefix $prefix --dir "$out/slurm"
  timeout 60 "$nc" down --prefix $prefix >/dev/null 2>&1
  [[ -n ${MATRIX_KEEP:-} ]] && cp -r "$out" "$MATRIX_KEEP"
  rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The rsh agent both MPI launchers use to start their daemons on a simulated host.
printf '#!/bin/sh\nexec %q rsh "$@"\n' "$nc" >"$out/rsh"
chmod +x "$out/rsh"

wanted() { local l; for l in "${launchers[@]}"; do [[ $l == "$1"* ]] && return 0; done; return 1; }
if (wanted slurm || wanted sbatch) && command -v slurmd >/dev/null && command -v munged >/dev/null; then
  if timeout 120 "$here/slurm_cluster.sh" up --prefix $prefix --subnet $subnet --hosts 4 \
       --rate "${MATRIX_RATE:-1gbit}" --dir "$out/slurm" >"$out/slurm-up.log" 2>&1; then
    slurm_up=1
  else
    echo "FAIL: slurm_cluster.sh up:"; cat "$out/slurm-up.log"; exit 1
  fi
else
  timeout 60 "$nc" up 4 --prefix $prefix --subnet $subnet --rate "${MATRIX_RATE:-1gbit}" >/dev/null ||
    { echo "FAIL: netcluster up"; exit 1; }
fi
on_head() { SLURM_CONF=$out/slurm/slurm.conf timeout -k 5 "$limit" "$nc" exec ${prefix}0 -- "$@"; }

# sbatch: submit, then poll the job's state (sbatch --wait polls every 32 s at worst).
run_sbatch() {
  local n=$1 h=$2 log=$3 id state i
  id=$(on_head sbatch --parsable -N "$h" -n "$n" --ntasks-per-node=$((n / h)) -o "$log" \
       "$here/slurm_batch.sh" "${perf[@]}") || return 1
  for i in $(seq $((limit * 4))); do
    state=$(on_head squeue -h -j "$id" -o %T 2>/dev/null)
    [[ -z $state ]] && break
    sleep 0.25
  done
  [[ -z $state ]] || { on_head scancel "$id"; echo "job $id still $state after $limit s" >>"$log"; return 1; }
  state=$(on_head scontrol show job "$id" -o 2>/dev/null | grep -o 'ExitCode=[0-9:]*')
  [[ -z $state || $state == ExitCode=0:0 ]]
}

# torchrun on every host at once, the c10d rendezvous on host 0; each host's output into LOG.
rdzv_port=29460
run_torchrun() {
  local h=$1 p=$2 log=$3 k pids=() rc=0 prog
  shift 3
  rdzv_port=$((rdzv_port + 1))
  for ((k = 0; k < h; k++)); do
    timeout -k 5 "$limit" "$nc" exec $prefix$k -- env PYTHONPATH="$bindir/../python" /usr/bin/torchrun --nnodes "$h" \
      --nproc_per_node "$p" --rdzv_backend c10d --rdzv_endpoint "${prefix}0:$rdzv_port" --rdzv_id "matrix$rdzv_port" \
      --redirects 1 --tee 1 --log_dir "$out/torchrun-$rdzv_port-$k" "$@" >"$log.$k" 2>&1 &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || rc=$?; done
  cat "$log".* >"$log"
  return $rc
}

# run LAUNCHER HOSTS PER_HOST LOG: one run; its exit status.
run() {
  local l=$1 h=$2 p=$3 log=$4 n=$(($2 * $3)) list="" k
  for ((k = 0; k < h; k++)); do list+="${list:+,}$prefix$k:$p"; done
  case $l in
    slurm) on_head srun --mpi=pmix -N "$h" -n "$n" --ntasks-per-node="$p" "${perf[@]}" >"$log" 2>&1 ;;
    slurm-none) on_head srun --mpi=none -N "$h" -n "$n" --ntasks-per-node="$p" "${perf[@]}" >"$log" 2>&1 ;;
    sbatch) run_sbatch "$n" "$h" "$log" ;;
    openmpi) on_head mpirun.openmpi --allow-run-as-root --bind-to none --mca plm_rsh_agent "$out/rsh" -H "$list" \
               -n "$n" -x COLL_TIMEOUT -x COLL_DEBUG -x COLL_DEBUG_SUBSYS "${perf[@]}" >"$log" 2>&1 ;;
    mpich) on_head mpirun.mpich -launcher ssh -launcher-exec "$out/rsh" -hosts "$list" -iface eth0 -n "$n" \
             "${perf[@]}" >"$log" 2>&1 ;;
    torchrun) run_torchrun "$h" "$p" "$log" --no_python "${perf[@]}" ;;
    torchrun-py) run_torchrun "$h" "$p" "$log" "$here/torch_hosts.py" ;;
  esac
}

# Why LAUNCHER cannot run here, or nothing.
unavailable() {
  case $1 in
    slurm) [[ $slurm_up == 1 ]] || { echo "slurm-wlm and munge are not installed"; return; }
           on_head srun --mpi=list 2>&1 | grep -q pmix || echo "this Slurm has no mpi/pmix plugin"
           [[ $have_pmix == ON ]] || echo "coll was built without PMIx (libpmix-dev)" ;;
    slurm-none|sbatch) [[ $slurm_up == 1 ]] || echo "slurm-wlm and munge are not installed" ;;
    openmpi) command -v mpirun.openmpi >/dev/null || { echo "mpirun.openmpi is not installed"; return; }
             [[ $have_pmix == ON ]] || echo "coll was built without PMIx: Open MPI across hosts needs -x MASTER_ADDR" ;;
    mpich) command -v mpirun.mpich >/dev/null || echo "mpirun.mpich is not installed" ;;
    torchrun) [[ -x /usr/bin/torchrun ]] || echo "/usr/bin/torchrun is not installed (python3-torch)" ;;
    torchrun-py) [[ -x /usr/bin/torchrun ]] || { echo "/usr/bin/torchrun is not installed (python3-torch)"; return; }
                 [[ -f $bindir/../python/coll/torch.py ]] || echo "coll's torch backend was not built ($bindir/../python)" ;;
    *) echo "unknown launcher" ;;
  esac
}

mpi_default() { sed -n 's/^MpiDefault=//p' "$out/slurm/slurm.conf"; }

# The path each launcher's ranks must report ("launcher L: rank r of n, ..., secret from ...").
expected_path() {
  case $1 in
    slurm) echo "launcher slurm: .*via PMIx" ;;
    slurm-none) echo "launcher slurm: .*derived from slurm/" ;;
    # slurm_cluster.sh sets MpiDefault=pmix where the plugin is there
    sbatch) if [[ $have_pmix == ON && $(mpi_default) == pmix ]]; then echo "launcher slurm: .*via PMIx"
            else echo "launcher slurm: .*derived from slurm/"; fi ;;
    openmpi) echo "launcher openmpi: .*via PMIx" ;;
    mpich) echo "launcher mpich: .*via PMI$" ;;
    torchrun) echo "launcher torchrun: " ;;
    torchrun-py) echo "" ;;  # torch hands the backend its store: no launcher line
  esac
}

# check LOG N PATH_REGEX: the run's output proves a correct run on the right transports.
check() {
  /usr/bin/python3 - "$@" <<'EOF'
import re, sys
log, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
# torchrun --tee prefixes each chunk it copies, so the prefix can fall inside a line too.
text = re.sub(r"\[default\d+\]:", "", open(log, errors="replace").read())
bad = []
torch = {int(r): h for r, h in re.findall(r"torch-coll rank (\d+) of \d+ on (\S+): .*ddp OK", text)}
if not torch and "# Out of bounds values : 0 OK" not in text:
    bad.append("no '# Out of bounds values : 0 OK'")
host = torch or {int(r): h for r, h in re.findall(r"#\s+Rank\s+(\d+) .* on\s+(\S+) device", text)}
if sorted(host) != list(range(n)):
    bad.append(f"the table names ranks {sorted(host)}, not 0..{n - 1}")
# Each up to the next log line's start: a launcher may forward two ranks' lines onto one.
paths = re.findall(r"coll INFO INIT (launcher \S+ rank (\d+) of \d+.*?)(?=coll INFO|$)", text, re.M)
for r in range(n if path else 0):
    if not any(int(k) == r and re.search(path, line) for line, k in paths):
        bad.append(f"rank {r} did not report '{path}'")
lines = re.findall(r"\[rank (\d+)\] transports: (.*?); between hosts", text)
seen = set()
for r, body in lines:
    r = int(r); seen.add(r)
    for peers, via in re.findall(r"peers? ([\d,]+) via (\w+)", body):
        for p in map(int, peers.split(",")):
            same = host.get(p) == host.get(r)
            if same and via != "shm":
                bad.append(f"rank {r} reaches rank {p} on its own host {host.get(r)} via {via}, not shm")
            if not same and via not in ("socket", "ucx", "verbs"):
                bad.append(f"rank {r} reaches rank {p} on another host via {via}")
if seen != set(range(n)):
    bad.append(f"transports lines from ranks {sorted(seen)}, not 0..{n - 1}")
busbw = re.search(r"# Avg bus bandwidth\s*:\s*(\S+)", text)
# Rows whose time parses: a log line on stderr may land inside a row (torchrun interleaves them).
last = [l.split() for l in text.splitlines() if re.match(r"\s+\d+\s+\d+\s+float\s+\w+\s+-?\d+\s+[\d.]+\s", l)]
if last and busbw:  # out-of-place busbw from the time: the table rounds it to 2 decimals
    size, us = int(last[-1][0]), float(last[-1][5])
    print(f"busbw at {size} B {size / (us * 1e3) * 2 * (n - 1) / n:.4f} GB/s (avg of the table {float(busbw[1]):.4f})")
else:
    print("no busbw")
for b in bad[:10]:
    print("  " + b)
sys.exit(1 if bad else 0)
EOF
}

status=0 ran=0 skipped=() summary=()
for l in "${launchers[@]}"; do
  why=$(unavailable "$l")
  if [[ -n $why ]]; then skipped+=("$l ($why)"); continue; fi
  run_shapes=("${shapes[@]}")
  [[ $l == torchrun-py ]] && run_shapes=("${torch_shapes[@]}")
  for s in "${run_shapes[@]}"; do
    h=${s%x*} p=${s#*x} log=$out/$l-$s.log
    start=$(date +%s.%N)
    run "$l" "$h" "$p" "$log"; rc=$?
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    result=$(check "$log" $((h * p)) "$(expected_path "$l")"); ok=$?
    ran=$((ran + 1))
    if [[ $rc == 0 && $ok == 0 ]]; then
      summary+=("PASS $l ${h} hosts x $p: ${result%%$'\n'*} ($secs s)")
    else
      status=1
      summary+=("FAIL $l ${h} hosts x $p: exit $rc ($secs s)" "$result")
      # The tail is the last host's output; a rank's first error on another host (rank 0 unable
      # to serve the store, say) would be cut off, so every host's error lines come first.
      echo "--- $l $s errors, every host:"; grep -E "error|cannot|refused|FAIL" "$log" | grep -v "coll INFO" | head -n 20
      # Which store each rank went to, and who served one: a rank refused by a store (a wrong
      # job secret) met another job's, and these lines say whose and where.
      echo "--- $l $s stores, every host:"; grep -E "launcher [a-z-]+: rank|serving the rendezvous store" "$log" | head -n 20
      echo "--- $l $s output (last 40 lines):"; grep -v "coll INFO" "$log" | tail -n 40
    fi
  done
done
# coll-doctor under each launcher: the same launch, the doctor instead of all_reduce_perf.
if [[ ${MATRIX_DOCTOR:-1} != 0 ]]; then
  perf=("$bindir/coll-doctor" --timeout 20)
  read -r -a doctor_launchers <<<"${MATRIX_DOCTOR_LAUNCHERS:-slurm mpich torchrun}"
  for l in "${doctor_launchers[@]}"; do
    wanted "$l" && [[ $l != torchrun-py && -z $(unavailable "$l") ]] || continue
    log=$out/doctor-$l.log
    run "$l" 2 2 "$log"; rc=$?
    if [[ $rc == 0 ]] && grep -q "verdict: OK" "$log" && grep -q "probes between hosts: 8 of 8 succeeded" "$log"; then
      summary+=("PASS coll-doctor under $l, 2 hosts x 2")
    else
      status=1
      summary+=("FAIL coll-doctor under $l, 2 hosts x 2: exit $rc")
      echo "--- coll-doctor under $l:"; grep -v "coll INFO" "$log" | tail -n 30
    fi
  done
fi
printf '%s\n' "${summary[@]}"
[[ ${#skipped[@]} -gt 0 ]] && printf 'skipped: %s\n' "${skipped[@]}"
[[ $ran -gt 0 ]] || { echo "SKIP: no launcher could run"; exit 77; }
exit $status
