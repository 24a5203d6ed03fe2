#!/usr/bin/env bash
# bench/scripts/sim.py repeat (a measurement against a second one) on two small measured CSVs
# whose counts are known: of 4 points, 2 within 15% (one below 64 KiB, one above), and one of the
# 2 sizes with the same fastest algorithm; files with no point in common are refused.
#   measured_repeatability_e2e.sh PATH/TO/sim.py
set -uo pipefail
script=${1:?path to bench/scripts/sim.py}
dir=$(mktemp -d "${TMPDIR:-/tmp}/coll-repeat.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat >"$dir/a.csv" <<'CSV'
collective,algorithm,bytes,measured_us
allreduce,ring,8,100
allreduce,tree,8,50
allreduce,ring,1048576,1000
allreduce,tree,1048576,2000
CSV
cat >"$dir/b.csv" <<'CSV'
collective,algorithm,bytes,measured_us
allreduce,ring,8,110
allreduce,tree,8,200
allreduce,ring,1048576,1500
allreduce,tree,1048576,2100
CSV
out=$(/usr/bin/python3 "$script" repeat "$dir/a.csv" "$dir/b.csv") || { echo "$out"; echo "FAIL: exit status"; exit 1; }
want="second within 15% of first: 2/4 (50%) of (algorithm, size) points; below 64 KiB 1/2 (50%), 64 KiB and above 1/2 (50%); same fastest algorithm: 1/2 (50%) of sizes"
[[ $out == "$want" ]] || { echo "got:  $out"; echo "want: $want"; echo "FAIL: counts"; exit 1; }
printf 'collective,algorithm,bytes,measured_us\nbroadcast,chain,8,1\n' >"$dir/c.csv"
if /usr/bin/python3 "$script" repeat "$dir/a.csv" "$dir/c.csv" >/dev/null 2>&1; then
  echo "FAIL: files with no point in common were compared"; exit 1
fi
echo "measured_repeatability: ok"
