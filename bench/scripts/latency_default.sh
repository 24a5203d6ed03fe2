#!/bin/bash
# 8-byte all-reduce latency as a user measures it, with each launcher's defaults: collrun and
# all_reduce_perf beside mpirun (Open MPI) and MPI_Allreduce, 5 alternating runs at 2 and 4
# ranks, the median and the spread (each run's time / the median). Bounded: about a minute.
#   bench/scripts/latency_default.sh [BUILD_DIR] [RUNS]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
mpi=$build/peers/mpi_perf_openmpi
[[ -x $mpi ]] || { echo "no $mpi (Open MPI's peer benchmark is built where mpicc.openmpi exists)"; exit 77; }
coll_run() {  # prints the out-of-place time (us)
  timeout 120 "$build/bin/collrun" -n "$1" "$build/bin/all_reduce_perf" -b 8 -e 8 -n 1000 -w 100 2>/dev/null |
    awk '/^\[0\] +8 /{print $7}'
}
mpi_run() {
  timeout 120 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$1" "$mpi" allreduce 8 8 2 1000 100 2>/dev/null |
    awk '$1 == 8 {print $2}'
}
summary() {  # name ranks values...
  local name=$1 n=$2
  shift 2
  python3 - "$name" "$n" "$@" <<'PY'
import statistics, sys
name, n, got = sys.argv[1], sys.argv[2], sys.argv[3:]
xs = [float(x) for x in got if x]
failed = f" ({len(got) - len(xs)} run(s) gave no figure)" if len(xs) < len(got) else ""
if not xs:
    sys.exit(print(f"| {name} | {n} | - | - | no run gave a figure |"))
m = statistics.median(xs)
print(f"| {name} | {n} | {m:.2f} | {max(xs) / m:.2f} | {' '.join(f'{x:.2f}' for x in xs)}{failed} |")
PY
}
echo "| launcher, benchmark | ranks | median (us) | slowest / median | runs (us) |"
echo "|---|---|---|---|---|"
for n in 2 4; do
  c=() m=()
  for ((i = 0; i < runs; ++i)); do
    c+=("$(coll_run "$n" || true)")
    m+=("$(mpi_run "$n" || true)")
  done
  summary "collrun (defaults), all_reduce_perf" "$n" "${c[@]}"
  summary "mpirun.openmpi (defaults), MPI_Allreduce" "$n" "${m[@]}"
done
"$build/bin/collrun" -n 2 true 2>&1 | grep -m1 '^collrun:' || true
