#!/usr/bin/env bash
# bench/scripts/sim.py goal (issue 52 item 5) on two small measured CSVs and a simulation whose
# counts are known. Three sizes of two algorithms: at 8 B both measurements have tree fastest and
# the simulation picks ring (a miss); at 1 MiB all agree on ring (a hit); at 2 KiB the two
# measurements disagree on the fastest and the simulation's ring is within 10 % of the mean's
# best (a hit where the machine does not repeat). Of the 6 points 4 are repeatable, 2 of them
# simulated within 15 % (both from 64 KiB).
#   sim_goal_e2e.sh PATH/TO/sim.py
set -uo pipefail
script=${1:?path to bench/scripts/sim.py}
dir=$(mktemp -d "${TMPDIR:-/tmp}/coll-sim-goal.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat >"$dir/a.csv" <<'CSV'
collective,algorithm,bytes,measured_us
allreduce,ring,8,100
allreduce,tree,8,50
allreduce,ring,2048,100
allreduce,tree,2048,130
allreduce,ring,1048576,1000
allreduce,tree,1048576,2000
CSV
cat >"$dir/b.csv" <<'CSV'
collective,algorithm,bytes,measured_us
allreduce,ring,8,110
allreduce,tree,8,55
allreduce,ring,2048,150
allreduce,tree,2048,100
allreduce,ring,1048576,1050
allreduce,tree,1048576,2100
CSV
cat >"$dir/sim.csv" <<'CSV'
collective,ranks,hosts,algorithm,bytes,sim_us,model_us,chosen
allreduce,4,2,ring,8,60,0,0
allreduce,4,2,tree,8,80,0,0
allreduce,4,2,ring,2048,90,0,0
allreduce,4,2,tree,2048,120,0,0
allreduce,4,2,ring,1048576,1000,0,0
allreduce,4,2,tree,1048576,1900,0,0
CSV
out=$(/usr/bin/python3 "$script" goal "$dir/a.csv" "$dir/b.csv" --sim "$dir/sim.csv") || {
  echo "$out"; echo "FAIL: exit status"; exit 1; }
for want in "repeatable points (the two measurements within 10%): 4/6 (67%)" \
            "simulated within 15% of them: 2/4 (50%) (goal 85%); below 64 KiB 0/2 (0%), from 64 KiB 2/2 (100%)" \
            "geometric-mean error from 64 KiB: 5.2% over all 2 points" \
            "simulation's pick measured within 10% of the measured fastest: 2/3 (67%) of sizes" \
            "where the measured fastest repeats" \
            "2/3 (67%) of sizes; the simulation's pick within 10% at 1/2 (50%) of them" \
            "  allreduce 8: ring / tree (2.00)"; do
  [[ $out == *"$want"* ]] || { echo "$out"; echo "FAIL: missing: $want"; exit 1; }
done
echo "sim_goal: ok"
