#!/usr/bin/env bash
# torch's whole distributed test suite, gloo beside coll (posing as gloo), at each world size,
# then the side-by-side table (table.py) and every test whose outcome differs. About 6 minutes
# per backend per world size on 2 cores.
#   tests/torch_suite/whole_suite.sh [BUILD_DIR] [OUT_DIR] [WORLD_SIZES...]   (default: build /tmp/coll-suite 2 3 4)
# COLL_SUITE_PYTHON: the Python whose torch runs the suite (default /usr/bin/python3, Debian's
# torch 1.13, with coll from BUILD_DIR/python); a venv's python where coll is pip-installed (its
# torch 2.x, BUILD_DIR unused), e.g. COLL_SUITE_PYTHON=/opt/coll-venv/bin/python.
# COLL_SUITE_FORK=1: each test's ranks forked from the driver (run_suite.py --fork), not spawned:
# on torch 2.15 about 5 minutes per backend per world size instead of 35.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build} out=${2:-/tmp/coll-suite}
shift $(($# < 2 ? $# : 2))
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(2 3 4)
mkdir -p "$out"
py=${COLL_SUITE_PYTHON:-/usr/bin/python3}
pythonpath=$build/python; [[ $py != /usr/bin/python3 ]] && pythonpath=
for ws in "${sizes[@]}"; do
  for b in gloo coll; do
    extra=(); [[ $b == coll ]] && extra=(--alias)
    [[ ${COLL_SUITE_FORK:-0} == 1 ]] && extra+=(--fork)
    PYTHONPATH="$pythonpath" OMP_NUM_THREADS=1 timeout 2400 "$py" "$here/run_suite.py" --backend $b "${extra[@]}" \
      --world-size "$ws" --json "$out/$b-ws$ws.json" >"$out/$b-ws$ws.log" 2>&1
    grep '^suite:' "$out/$b-ws$ws.log" || echo "$b at world size $ws: no summary (see $out/$b-ws$ws.log)"
  done
done
/usr/bin/python3 "$here/table.py" "$out"/*.json
