#!/usr/bin/env bash
# How long coll-doctor takes: 4 simulated hosts x 2 ranks (8 ranks, 24 probed pairs between
# hosts) at 1 Gbit/s, started by hand on every host (RANK/WORLD_SIZE/MASTER_ADDR), ROUNDS times.
# Prints, per round, the wall time of the whole launch (every rank started to every rank exited)
# and what rank 0 says it took from reaching the store to its verdict.
#   bench/scripts/doctor_time.sh [BINDIR] [ROUNDS] [RATE]
# Root (network namespaces). Its own netcluster (prefix ndt, subnet 10.214.30), torn down at exit.
set -u
bindir=${1:-build/bin} rounds=${2:-5} rate=${3:-1gbit}
here=$(cd "$(dirname "$0")" && pwd)
nc=${NETCLUSTER:-$here/../../../shared/tools/netcluster}
[[ -x $nc ]] || nc=/work/shared/tools/netcluster
prefix=ndt subnet=10.214.30 hosts=4 per=2 port=29640
[[ $EUID -eq 0 ]] || { echo "doctor_time.sh: needs root (network namespaces)" >&2; exit 2; }
out=$(mktemp -d "${TMPDIR:-/tmp}/coll-doctor-time.XXXXXX")
pids=()
trap '[[ ${#pids[@]} -gt 0 ]] && kill "${pids[@]}" 2>/dev/null; timeout 60 "$nc" down --prefix $prefix >/dev/null 2>&1; rm -rf "$out"' EXIT
timeout 60 "$nc" up $hosts --rate "$rate" --prefix $prefix --subnet $subnet >/dev/null || exit 1
n=$((hosts * per))
echo "# coll-doctor on $hosts hosts x $per ranks at $rate"
echo "# round  launch_s  rank0_s  verdict"
for ((k = 1; k <= rounds; k++)); do
  port=$((port + 1)) pids=()
  t0=$(date +%s%N)
  for ((r = 0; r < n; r++)); do
    timeout 60 "$nc" exec $prefix$((r / per)) -- env RANK=$r WORLD_SIZE=$n MASTER_ADDR=$subnet.1 \
      MASTER_PORT=$port COLL_JOB_SECRET=doctor-$port "$bindir/coll-doctor" >"$out/$r" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  pids=()
  t1=$(date +%s%N)
  rank0=$(sed -n 's/^(.* checked in \([0-9.]*\) s.*/\1/p' "$out/0")
  verdict=$(sed -n 's/^verdict: //p' "$out/0")
  ms=$(((t1 - t0) / 1000000))
  printf '%7d  %5d.%02d  %7s  %s\n' "$k" $((ms / 1000)) $((ms % 1000 / 10)) "${rank0:-?}" "${verdict:-none}"
done
[[ -n ${DOCTOR_SHOW:-} ]] && cat "$out/0"
exit 0
