#!/bin/bash
# coll-sim of this build against every stored pair of measurements (docs/perf/sim_validation/
# goal_*/: two runs, a and b, of `sim.py validate` a layout): each run simulated again on its own
# probed topology (`sim.py validate --sim-only`), then issue 52's figures for the pair (`sim.py
# goal`). What a change to the model does to every pair at once, with no measurement: about 15 s.
#   bench/scripts/sim_pairs.sh [BUILD_DIR] [OUT_DIR]
# One line a pair and layout; OUT_DIR/PAIR/goal_LAYOUT.txt has goal's whole printout.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$(mktemp -d /tmp/coll-sim-pairs.XXXXXX)}
[[ -x $build/bin/coll-sim ]] || { echo "sim_pairs: no $build/bin/coll-sim"; exit 77; }
sim=$root/bench/scripts/sim.py

# simulate PAIR_DIR LAYOUT RUN WORK: the run's files under the names validate reads, simulated.
simulate() {
  local d=$1 lay=$2 run=$3 work=$4 f
  mkdir -p "$work"
  for f in "$d"/*_"${lay}"_1gbit_"$run".*; do
    local base=${f##*/}
    cp "$f" "$work/${base/_1gbit_$run./_1gbit.}"
  done
  timeout 300 python3 "$sim" validate --sim-only --build "$build" --hosts "${lay%x*}" --per-host "${lay#*x}" \
    --rate 1gbit --out "$work" >/dev/null
}

for d in "$root"/docs/perf/sim_validation/goal_*/; do
  pair=$(basename "$d")
  for first in "$d"/measured_*_1gbit_a.csv; do
    lay=${first##*/measured_}; lay=${lay%_1gbit_a.csv}  # HxR
    [[ -f $d/measured_${lay}_1gbit_b.csv ]] || continue
    for run in a b; do simulate "$d" "$lay" "$run" "$out/$pair/$lay$run"; done
    report=$out/$pair/goal_$lay.txt
    python3 "$sim" goal "$d/measured_${lay}_1gbit_a.csv" "$d/measured_${lay}_1gbit_b.csv" \
      --sim "$out/$pair/${lay}a/sim_${lay}_1gbit.csv" --sim "$out/$pair/${lay}b/sim_${lay}_1gbit.csv" >"$report"
    grep -q "of them:" "$report" || { echo "sim_pairs: $pair $lay: goal gave no figures ($report)"; exit 1; }
    echo "$pair $lay: within 15 %: $(grep -o 'of them: [0-9/]* ([0-9]*%)' "$report" | cut -d' ' -f3-)," \
      "geometric-mean error from 64 KiB: $(grep -o 'from 64 KiB: [0-9.]*%' "$report" | cut -d' ' -f4)," \
      "pick: $(grep -o 'fastest: [0-9/]* ([0-9]*%)' "$report" | head -1 | cut -d' ' -f2-)," \
      "where the fastest repeats: $(grep -o 'within 10% at [0-9/]* ([0-9]*%)' "$report" | cut -d' ' -f4-)"
  done
done
echo "(goal's printouts: $out)"
