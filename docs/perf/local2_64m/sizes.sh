#!/bin/bash
# per op and size (buffer = size, reused as a training step's are): coll -R 0 and -R 1, out/in place us, 2 ranks, interleaved
cd /work/main
for op in ${OPS:-all_gather all_reduce reduce_scatter broadcast}; do
  for s in ${SIZES:-1M 4M 16M 64M}; do
    line="$op $s:"
    for rep in 1 2; do for R in 0 1; do
      t=$(build/bin/collrun --bind-to core -n 2 build/bin/${op}_perf -b $s -e $s -n 30 -w 10 -c 1 -R $R 2>&1 | grep -E "^\[0\] +[0-9]+ " | awk '{printf "%s/%s", $7, $11}')
      line="$line R$R=$t"
    done; done
    echo "$line"
  done
done
