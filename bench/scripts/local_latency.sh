#!/bin/bash
# One host, N ranks: coll's 8-byte all-reduce latency (collrun, loopback TCP) beside Open MPI's
# and MPICH's (their shared-memory paths), interleaved over several rounds; medians.
# usage: bench/scripts/local_latency.sh [--build DIR] [--ranks 4] [--rounds 3]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build ranks=4 rounds=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
row() { awk '$1 ~ /^(\[0\] )?[0-9]+$/ || $2 ~ /^[0-9]+$/' | sed 's/^\[0\] //' | awk '$1 ~ /^[0-9]+$/'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
coll= ompi= mpich=
for r in $(seq "$rounds"); do
  coll+="$(timeout 300 "$build/bin/collrun" -n "$ranks" "$build/bin/all_reduce_perf" -b 8 -e 8 -n 1000 -w 100 -c 0 | row | awk '{print $6}') "
  [[ -x $build/peers/mpi_perf_openmpi ]] && ompi+="$(timeout 300 mpirun.openmpi --allow-run-as-root --oversubscribe -n "$ranks" "$build/peers/mpi_perf_openmpi" allreduce 8 8 2 1000 100 | row | awk '{print $2}') "
  [[ -x $build/peers/mpi_perf_mpich ]] && mpich+="$(timeout 300 mpirun.mpich -n "$ranks" "$build/peers/mpi_perf_mpich" allreduce 8 8 2 1000 100 | row | awk '{print $2}') "
done
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
echo "# one host, $ranks ranks, 8-byte float sum all-reduce, median of $rounds rounds (us)"
printf '%-10s %10s\n' coll "$(med "$coll")"
[[ -n $ompi ]] && printf '%-10s %10s\n' "Open MPI" "$(med "$ompi")"
[[ -n $mpich ]] && printf '%-10s %10s\n' MPICH "$(med "$mpich")"
