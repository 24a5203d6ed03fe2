#!/bin/bash
# coll.tensorflow as a TensorFlow user gets it: this checkout pip-installed (PEP 517,
# scikit-build-core) into a fresh venv that sees the registry's TensorFlow (COLL_VENV_TF, made by
# tools/dev.sh; its site-packages made visible through a .pth file), `python -m coll` saying
# coll.tensorflow is usable, then tests/tensorflow/ops_check.py under collrun at 2 and 3 ranks,
# tests/tensorflow/stall_check.py (an op only rank 0 calls: the ledger's report) at 3, the
# ImportError under another TensorFlow version, tests/tensorflow/launch_check.py under Open MPI,
# MPICH, a torchrun-style environment and srun
# (2 netcluster hosts of a real Slurm), and tests/tensorflow/keras_check.py (Keras training
# against one process) at 4.
# usage: tf_test.sh SOURCE_DIR COLLRUN
# Exits 77 (ctest: skipped) where COLL_VENV_TF has no TensorFlow, saying so.
set -euo pipefail
src=$(cd "$1" && pwd) collrun=$2
venv=${COLL_VENV_TF:-/opt/coll-venv-tf}
py=$venv/bin/python
if ! "$py" -c 'import tensorflow, scikit_build_core' 2>/dev/null; then
  echo "tensorflow test: $venv lacks tensorflow or scikit-build-core (tools/dev.sh makes it): skipping"; exit 77
fi
work=$(mktemp -d /tmp/coll-tf.XXXXXX)
slurm=$src/tests/launcher/slurm_cluster.sh slurm_up=0
slurm_args=(--prefix ntt --dir "$work/slurm")
cleanup() {
  [[ $slurm_up == 1 ]] && timeout 60 "$slurm" down "${slurm_args[@]}" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
site() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
# How often TEXT occurs in FILE: not grep -c, since launchers forward the ranks' output in pieces
# and two ranks' lines can land on one ("rank 0 ...: launch ok (sum 3)rank 1 ...: launch ok").
count() { grep -o "$1" "$2" | wc -l; }

echo "== pip install into a fresh venv with the registry's TensorFlow"
"$py" -m venv "$work/venv"
site "$py" >"$(site "$work/venv/bin/python")/registry_tf.pth"
# (ccache, where tools/dev.sh set it up: paths relative to the temp folder, so the build folder's
# new name each time hashes the same.)
CCACHE_BASEDIR=$(dirname "$work") CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) timeout 1500 "$work/venv/bin/pip" install --no-build-isolation --no-deps \
  --ignore-installed -Cbuild-dir="$work/build" "$src" >"$work/install.log" 2>&1 || { tail -60 "$work/install.log"; exit 1; }
grep "coll wheel:" "$work/install.log" || true

cd "$work"  # outside the source tree: everything imports from the venv
echo "== python -m coll"
"$work/venv/bin/python" -m coll | tee "$work/info.txt"
grep -q "coll at $work/venv/" "$work/info.txt" || { echo "tensorflow test: imported another coll than the one installed"; exit 1; }
grep -q "coll.tensorflow: ok" "$work/info.txt"

# CHECK (tests/tensorflow/CHECK.py) on N ranks under collrun, COLL_TIMEOUT seconds an op, the
# whole within LIMIT seconds; every rank must say "CHECK: ok".
ranks_check() {
  local check=$1 n=$2 coll_timeout=$3 limit=$4 out=$work/$1-$2.txt
  COLL_TIMEOUT=$coll_timeout OMP_NUM_THREADS=1 timeout "$limit" "$collrun" -n "$n" "$work/venv/bin/python" \
    "$src/tests/tensorflow/$check.py" >"$out" 2>&1 || { cat "$out"; exit 1; }
  grep "^\[0\] rank 0:" "$out"
  [[ $(count "$check: ok" "$out") == "$n" ]] || { cat "$out"; exit 1; }
}
for n in 2 3; do
  echo "== ops_check.py on $n ranks (collrun)"
  ranks_check ops_check "$n" 60 600
done
echo "== stall_check.py on 3 ranks: an all-reduce only rank 0 calls fails by COLL_TIMEOUT, the ledger naming the others"
ranks_check stall_check 3 8 120

echo "== another TensorFlow than the one coll.tensorflow was built for: ImportError naming both"
"$work/venv/bin/python" - >"$work/version.txt" 2>&1 <<'PY' || { cat "$work/version.txt"; exit 1; }
import tensorflow as tf
built = tf.__version__
tf.__version__ = "2.0.0"  # as if the environment's TensorFlow had changed since coll was built
try:
    import coll.tensorflow  # noqa: F401
except ImportError as e:
    assert f"built for TensorFlow {built}" in str(e) and "TensorFlow 2.0.0 is installed" in str(e), str(e)
    print(f"version mismatch: ok: {e}")
else:
    raise SystemExit("coll.tensorflow imported under another TensorFlow than it was built for")
PY
cat "$work/version.txt"

echo "== launch_check.py on 2 ranks under Open MPI, MPICH and a torchrun-style environment"
launch() {  # name, then the command; every rank must say "launch ok"
  local name=$1; shift
  timeout 300 "$@" >"$work/launch-$name.txt" 2>&1 || { cat "$work/launch-$name.txt"; exit 1; }
  [[ $(count "launch ok" "$work/launch-$name.txt") == 2 ]] || { cat "$work/launch-$name.txt"; exit 1; }
  echo "$name: ok"
}
check=$src/tests/tensorflow/launch_check.py
command -v mpirun.openmpi >/dev/null &&
  launch openmpi mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 "$work/venv/bin/python" "$check"
command -v mpirun.mpich >/dev/null && launch mpich mpirun.mpich -n 2 "$work/venv/bin/python" "$check"
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
launch env bash -c "for r in 0 1; do RANK=\$r WORLD_SIZE=2 LOCAL_RANK=\$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
  '$work/venv/bin/python' '$check' & done; wait"

echo "== launch_check.py on 2 hosts under srun (a real Slurm on netcluster hosts: tests/launcher/slurm_cluster.sh)"
if [[ $EUID -ne 0 ]] || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  echo "srun: skipped (needs root, slurm-wlm and munge: tools/dev.sh installs them where it can)"
elif timeout 120 "$slurm" up "${slurm_args[@]}" --subnet 10.214.44 --hosts 2 >"$work/slurm-up.log" 2>&1; then
  slurm_up=1
  launch srun timeout 300 "$slurm" run "${slurm_args[@]}" -- srun -N 2 -n 2 "$work/venv/bin/python" "$check"
else
  cat "$work/slurm-up.log"; exit 1
fi

echo "== keras_check.py on 4 ranks: model.fit and a custom loop against one process on the global batch"
ranks_check keras_check 4 120 900
echo "tensorflow test: ok"
