#!/bin/bash
# interleaved rounds: 64 MiB all-gather on 2 ranks, coll variants against Open MPI (time in us)
cd /work/main
R=${R:-5}
for r in $(seq 1 $R); do
  for v in "$@"; do
    if [ "$v" = ompi ]; then
      t=$(timeout 120 mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 build/peers/mpi_perf_openmpi allgather --plan 67108864:20:20 1 2>&1 | awk '$1==67108864{print $2; exit}')
    else
      prog=build/bin/all_gather_perf; case $v in BIN=*) prog=${v#BIN=}; v=COLL_X=1;; esac
      t=$(env $v timeout 120 build/bin/collrun --bind-to core -n 2 $prog -b 64M -e 64M -n 20 -w 20 -c 1 2>&1 | sed 's/^\[0\] *//' | awk '$1==67108864{print $6; exit}')
    fi
    echo "$r $v $t"
  done
done
