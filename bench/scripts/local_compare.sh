#!/bin/bash
# One host: coll (collrun) beside Open MPI and MPICH (their default shared-memory paths),
# float32 sum all-reduce and broadcast from rank 0, 2 and 4 ranks, interleaved rounds, medians;
# plus this machine's memcpy bandwidth (1 and 2 threads) as the physical limit.
# usage: bench/scripts/local_compare.sh [--build DIR] [--ranks "2 4"] [--rounds 3]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build ranks="2 4" rounds=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
M64=$((64 << 20)) M256=$((256 << 20))
rows() { sed 's/^\[0\] //' | awk '$1 ~ /^[0-9]+$/'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
declare -A res

# coll: time (us) per size -> busbw; latency = time of the 8-byte row. All-reduce out of
# place (MPI_Allreduce with two buffers); broadcast in place, as MPI_Bcast has one buffer (out
# of place, coll's root also copies its input to its output). Latency waits on each op (-z 2),
# as the blocking MPI calls do, 2000 times after 500 warm-up calls on both sides.
coll_run() { # n prog factor column (6: out-of-place time, 10: in-place)
  # Pinned where the ranks fit the cores, as Open MPI binds by default (to cores, for 2 ranks).
  local bind=none
  [[ $1 -le $(nproc) ]] && bind=core
  timeout 600 "$build/bin/collrun" --bind-to $bind -n "$1" "$build/bin/$2" -b 8 -e 8 -n 2000 -w 500 -c 0 -z 2 | rows | awk -v c="$4" '{print "lat", $c}'
  for s in $M64 $M256; do
    timeout 600 "$build/bin/collrun" --bind-to $bind -n "$1" "$build/bin/$2" -b $s -e $s -n 5 -w 1 -c 1 | rows |
      awk -v f="$3" -v c="$4" '{printf "%d %.4f\n", $1, $1/$c/1e3*f}'
  done
}
mpi_run() { # launcher-args... -- prog op factor
  local launch=() ; while [[ $1 != -- ]]; do launch+=("$1"); shift; done; shift
  local prog=$1 op=$2 f=$3
  timeout 600 "${launch[@]}" "$prog" "$op" 8 8 2 2000 500 | rows | awk '{print "lat", $2}'
  for s in $M64 $M256; do
    timeout 600 "${launch[@]}" "$prog" "$op" $s $s 1 5 1 | rows | awk -v f="$f" '{printf "%d %.4f\n", $1, $1/$2/1e3*f}'
  done
}
record() { # system n op < "key value" lines (not in a pipeline: res must be this shell's)
  while read -r k v; do res[$1,$2,$3,$k]+="$v "; done
}

for r in $(seq "$rounds"); do
  for n in $ranks; do
    f=$(/usr/bin/python3 -c "print(2*($n-1)/$n)")
    record coll "$n" allreduce < <(coll_run "$n" all_reduce_perf "$f" 6)
    record coll "$n" broadcast < <(coll_run "$n" broadcast_perf 1 10)
    for op in allreduce broadcast; do
      ff=$f; [[ $op == broadcast ]] && ff=1
      if [[ -x $build/peers/mpi_perf_openmpi ]]; then
        record ompi "$n" $op < <(mpi_run mpirun.openmpi --allow-run-as-root --oversubscribe -n "$n" -- \
          "$build/peers/mpi_perf_openmpi" $op "$ff")
      fi
      if [[ -x $build/peers/mpi_perf_mpich ]]; then
        record mpich "$n" $op < <(mpi_run mpirun.mpich -n "$n" -- "$build/peers/mpi_perf_mpich" $op "$ff")
      fi
    done
  done
  echo "round $r done" >&2
done

med() { tr ' ' '\n' <<<"${res[$1]:-}" | grep . | median; }
ratio() { /usr/bin/python3 -c "a,b='$1','$2'; print(f'{float(a)/float(b):.2f}' if a and b else '-')"; }
"$build/bin/memory_bandwidth" 256M 5
echo "# one host, float32 sum, medians of $rounds rounds; busbw in GB/s (nccl-tests), latency in us"
printf '%-6s %-10s %-12s %10s %10s %10s %12s\n' ranks op measure coll "Open MPI" MPICH "coll/OpenMPI"
for n in $ranks; do
  for op in allreduce broadcast; do
    for k in lat $M64 $M256; do
      name=$k; [[ $k == lat ]] && name="8 B latency"; [[ $k == $M64 ]] && name="64M busbw"; [[ $k == $M256 ]] && name="256M busbw"
      c=$(med "coll,$n,$op,$k") o=$(med "ompi,$n,$op,$k") m=$(med "mpich,$n,$op,$k")
      printf '%-6s %-10s %-12s %10s %10s %10s %12s\n' "$n" $op "$name" "$c" "${o:--}" "${m:--}" "$(ratio "$c" "$o")"
    done
  done
done
