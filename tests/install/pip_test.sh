#!/bin/bash
# coll as a user of pip gets it: an sdist of the checkout (PEP 517, scikit-build-core), built
# into a wheel in a fresh venv that has the registry's torch, installed there; `python -m coll`
# says coll.torch is usable; a 3-rank torchrun job on backend "coll" (pip_torch_job.py); DDP,
# ZeRO and FSDP2 on 2 ranks against one process (tests/torch2/training_check.py); what torch 2.x
# asks of a backend beyond its ops (tests/torch2/backend_api_check.py); torch's
# own distributed suite's CI subset on that torch (tests/torch_suite/ci_subset.txt); torchft
# with coll's process group, a replica killed and replaced (tests/torch2/torchft_check.py); a torch
# other than the one coll.torch was built for is refused naming both versions; and the same
# wheel's numpy API works in a venv without torch.
# usage: pip_test.sh SOURCE_DIR [older]
# COLL_VENV: the venv tools/dev.sh made (python, the registry's torch, build, scikit-build-core);
# with `older`, COLL_VENV_OLDER's instead (default /opt/coll-venv-torch2.4: torch 2.4.1);
# its site-packages is made visible to the fresh venvs through a .pth file, as a site-wide
# torch would be, rather than unpacking several GB of torch again. COLL_PIP_NO_ISOLATION=1
# builds without pip's isolated environment (offline; it then needs no download at all).
set -euo pipefail
src=$(cd "$1" && pwd)
venv=${COLL_VENV:-/opt/coll-venv}
[[ ${2:-} == older ]] && venv=${COLL_VENV_OLDER:-/opt/coll-venv-torch2.4}
py=$venv/bin/python
if ! "$py" -c 'import torch, build, scikit_build_core' 2>/dev/null; then
  echo "pip test: $venv lacks torch, build or scikit-build-core (tools/dev.sh makes it): skipping"; exit 77
fi
work=$(mktemp -d /tmp/coll-pip.XXXXXX)
trap 'rm -rf "$work"' EXIT
site() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
isolation=(); [[ ${COLL_PIP_NO_ISOLATION:-0} == 1 ]] && isolation=(--no-build-isolation)

echo "== sdist"
"$py" -m build --sdist --no-isolation --outdir "$work/dist" "$src" >"$work/sdist.log" 2>&1 || { cat "$work/sdist.log"; exit 1; }
sdist=$(ls "$work"/dist/coll-*.tar.gz)
echo "$(basename "$sdist"): $(tar tzf "$sdist" | wc -l) files"

echo "== fresh venv with the registry's torch: pip wheel and pip install the sdist"
"$py" -m venv "$work/venv"
site "$py" >"$(site "$work/venv/bin/python")/registry_torch.pth"
# (ccache, where tools/dev.sh set it up: pip unpacks the sdist into a new folder under the temp
# folder each time, and builds inside it, so paths relative to the temp folder hash the same.)
CCACHE_BASEDIR=$(dirname "$work") CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) timeout 1500 "$work/venv/bin/pip" wheel "${isolation[@]}" --no-deps -w "$work/wheels" \
  "$sdist" >"$work/wheel.log" 2>&1 || { tail -60 "$work/wheel.log"; exit 1; }
grep "coll wheel:" "$work/wheel.log" || true
wheel=$(ls "$work"/wheels/coll-*.whl)
# --ignore-installed: a coll pip-installed into the registry's venv, which the .pth above makes
# visible, would otherwise count as installed, and the test would import that one.
"$work/venv/bin/pip" install --no-deps --ignore-installed "$wheel" >/dev/null
echo "$(basename "$wheel"): $(python3 -c "import zipfile,sys; print(', '.join(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.startswith('coll/')))" "$wheel")"

cd "$work"  # outside the source tree: everything imports from the venv
echo "== python -m coll"
"$work/venv/bin/python" -m coll | tee "$work/info.txt"
grep -q "coll at $work/venv/" "$work/info.txt" || { echo "pip test: imported another coll than the one installed"; exit 1; }
grep -q "coll.torch: ok" "$work/info.txt"

echo "== 3 ranks under torchrun, backend coll"
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
OMP_NUM_THREADS=1 COLL_TIMEOUT=60 timeout 300 "$work/venv/bin/python" -m torch.distributed.run --nproc-per-node 3 \
  --master-addr 127.0.0.1 --master-port "$port" "$src/tests/install/pip_torch_job.py" 2>&1 | tee "$work/job.txt" | grep "rank "
# (counted with -o: the ranks' lines can meet on one line of torchrun's output)
[[ $(grep -o "coll from [^ ]*: ok" "$work/job.txt" | wc -l) == 3 ]] || { cat "$work/job.txt"; exit 1; }

echo "== DDP (and no_sync), ZeroRedundancyOptimizer, FSDP2 fully_shard on 2 ranks against one process"
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
OMP_NUM_THREADS=1 COLL_TIMEOUT=60 timeout 300 "$work/venv/bin/python" -m torch.distributed.run --nproc-per-node 2 \
  --master-addr 127.0.0.1 --master-port "$port" "$src/tests/torch2/training_check.py" >"$work/train.txt" 2>&1 ||
  { cat "$work/train.txt"; exit 1; }
sed 's/rank [0-9]:/\n&/g' "$work/train.txt" | grep "^rank 0: [a-z_ ]*: "  # (ok, or skipped where this torch cannot)

echo "== the backend beyond its ops on 3 ranks: device map, split_group, timeouts, abort, destroy (tests/torch2)"
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
OMP_NUM_THREADS=1 COLL_TIMEOUT=60 timeout 300 "$work/venv/bin/python" -m torch.distributed.run --nproc-per-node 3 \
  --master-addr 127.0.0.1 --master-port "$port" "$src/tests/torch2/backend_api_check.py" >"$work/api.txt" 2>&1 || true
sed 's/rank [0-9]:/\n&/g' "$work/api.txt" | grep "^rank 0: [a-z_]*: " || true
# (counted with -o: the ranks' lines can meet on one line of torchrun's output)
[[ $(grep -o "rank [0-9]: backend_api_check: ok" "$work/api.txt" | wc -l) == 3 ]] || { cat "$work/api.txt"; exit 1; }

echo "== torch's own distributed suite, CI subset, coll posing as gloo (tests/torch_suite)"
# --fork: the ranks forked from the driver, minutes less per run, the same outcomes as spawned
# (docs/perf/torch_suite_2.15); torch_suite.ws3 runs the subset spawned on Debian's torch.
OMP_NUM_THREADS=1 timeout 900 "$work/venv/bin/python" "$src/tests/torch_suite/run_suite.py" --backend coll --alias \
  --world-size 3 --fork --list "$src/tests/torch_suite/ci_subset.txt" >"$work/suite.txt" 2>&1 || true
grep "^suite:" "$work/suite.txt" || { tail -40 "$work/suite.txt"; exit 1; }
grep -q "^suite: .* 0 failed, 0 error" "$work/suite.txt" || { grep -E "^(FAIL|ERROR):" "$work/suite.txt"; exit 1; }

echo "== torchft: a replica killed and replaced mid-training, coll.torch_ft's process group (tests/torch2)"
if "$work/venv/bin/python" -c 'import torchft' 2>/dev/null; then
  timeout 400 "$work/venv/bin/python" "$src/tests/torch2/torchft_check.py" --backend coll >"$work/torchft.txt" 2>&1 ||
    { grep -v "INFO\]" "$work/torchft.txt" | tail -60; exit 1; }
  grep -E "^\| |^torchft check" "$work/torchft.txt"
else
  echo "torchft is not installed in $venv (tools/dev.sh installs it where torch >= 2.7): skipped"
fi

echo "== another torch than the one coll.torch was built for"
info=$("$work/venv/bin/python" -c 'import coll._build_info as b; print(b.__file__)')
sed -i 's/^torch = "\(.*\)"/torch = "\1.other"/' "$info"
if "$work/venv/bin/python" -c 'import coll.torch' 2>"$work/mismatch.txt"; then echo "a mismatched torch was accepted"; exit 1; fi
tail -1 "$work/mismatch.txt"
grep -q "built for torch .*\.other, but torch .* is installed" "$work/mismatch.txt"
if "$work/venv/bin/python" -m coll >/dev/null; then echo "python -m coll passed a mismatched torch"; exit 1; fi

echo "== the same wheel, numpy API, in a venv without torch"
"$py" -m venv "$work/plain"
numpy_dir=$("$py" -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))')
mkdir -p "$work/numpy_only" && ln -s "$numpy_dir/numpy" "$work/numpy_only/numpy"  # numpy alone, not torch
echo "$work/numpy_only" >"$(site "$work/plain/bin/python")/numpy_only.pth"
"$work/plain/bin/pip" install --no-deps "$wheel" >/dev/null
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$work/plain/bin/python" -c '
import importlib.util, numpy as np, coll
assert importlib.util.find_spec("torch") is None
comm = coll.init()  # one rank, from the environment a launcher would set
x = np.arange(4, dtype=np.float32); comm.allreduce(x, x).wait()
print(f"numpy API without torch: coll {coll.__version__}, rank {comm.rank} of {comm.size}: ok")'
"$work/plain/bin/python" -m coll | grep "coll.torch"
echo "pip test: ok"
