#!/bin/bash
# coll-sim at scale (issue 27): all-reduce on hosts of 8 ranks behind a 2:1 oversubscribed fat
# tree (16 hosts per leaf), 100 Gbit/s per host, from 16 to 16,384 ranks: every algorithm at
# 8 B, 64 KiB, 1 MiB and 256 MiB, the selector's choice, and ring against tree over a full
# size sweep for the crossover. Writes CSVs and, with matplotlib, docs/perf/sim_scale/sim_scale.png.
# usage: bench/scripts/sim_scale.sh [--build DIR] [--out DIR] [--ranks "16 64 ... 16384"]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build out=$here/docs/perf/sim_scale ranks="16 64 256 1024 4096 16384"
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
# The modelled cluster: what a 100 Gbit/s Ethernet cluster with coll's CPU data path would show.
cluster="--per-host 8 --link 100gbit --hosts-per-leaf 16 --oversubscription 2 --inter-alpha-us 5"
log=$out/runs.log
: >"$log"
for n in $ranks; do
  hosts=$((n / 8))
  for size in 8 64K 1M 256M; do
    /usr/bin/time -f "# $n ranks, $size: %e s wall, %M KB peak" \
      "$build/bin/coll-sim" --hosts "$hosts" $cluster -b "$size" -e "$size" --algo all --stats \
      --csv "$out/points_${n}_$size.csv" >>"$log" 2>&1
  done
  # ring against tree over the whole range, for where one overtakes the other
  "$build/bin/coll-sim" --hosts "$hosts" $cluster -b 8 -e 256M -f 4 --algo ring,tree \
    --csv "$out/sweep_$n.csv" >>"$log" 2>&1
  echo "$n ranks done" >&2
done
/usr/bin/python3 "$here/bench/scripts/sim_scale_report.py" --dir "$out"
