#!/bin/bash
# pip install ./bindings/python into a venv that sees Debian's numpy and torch
# (--system-site-packages), offline (--no-index, --no-build-isolation), then import coll and
# coll.torch from outside the source tree and all-reduce on 2 ranks under collrun.
# usage: pip_test.sh BUILD_DIR SOURCE_DIR   (the extensions are built in BUILD_DIR)
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d /tmp/coll-pip.XXXXXX)
trap 'rm -rf "$work"' EXIT
if ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then
  echo "python3-venv is missing (apt-get install python3-venv): skipping"; exit 77
fi
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
cp -r "$src/bindings/python" "$work/pkg"  # pip builds in place: keep the source tree clean
sed -i "s|^ROOT = .*|ROOT = pathlib.Path('$src')|" "$work/pkg/setup.py"
COLL_SETUP_BUILD_DIR=$build timeout 500 "$work/venv/bin/pip" install --no-index --no-build-isolation "$work/pkg" \
  >"$work/pip.log" 2>&1 || { cat "$work/pip.log"; exit 1; }
tail -1 "$work/pip.log"
cat >"$work/allreduce.py" <<'PY'
import numpy as np
import coll, coll.torch  # both must import from the installed package
comm = coll.init()
x = np.arange(5, dtype=np.float32) * (comm.rank + 1)
comm.allreduce(x, x).wait()
want = np.arange(5, dtype=np.float32) * sum(r + 1 for r in range(comm.size))
assert np.array_equal(x, want), (x, want)
print(f"pip-installed coll from {coll.__file__}: rank {comm.rank} of {comm.size}: all-reduce ok")
PY
cd "$work"
PYTHONPATH= timeout 120 "$build/bin/collrun" -n 2 "$work/venv/bin/python" "$work/allreduce.py" | tee "$work/out"
grep -q "$work/venv/lib" "$work/out"
echo "pip test: ok"
