#!/bin/bash
# ctest python.build_for_python: builds the coll package with bindings/python/build_for_python.py
# (the path for a pip-installed torch) against PYTHON's torch into a scratch folder, then runs
# torch_cuda_ranks.py on 2 ranks over host tensors (COLL_TEST_DEVICE=cpu: the CUDA tests' logic
# without a GPU) with that package. Exits 77 (skipped) where PYTHON has no torch.
#   build_for_python_check.sh PYTHON LIBDIR
set -u
python=$1 libdir=$2
here=$(cd "$(dirname "$0")" && pwd)
if ! "$python" -c 'import torch' 2>/dev/null; then
  echo "build_for_python_check.sh: $python has no torch: skipped"
  exit 77
fi
out=$(mktemp -d --tmpdir coll_pybuild.XXXXXX)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null; rm -rf "$out"; }
trap cleanup EXIT
"$python" "$here/../build_for_python.py" --lib "$libdir" --out "$out" -j 2 || exit 1
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for r in 0 1; do
  PYTHONPATH=$out RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port COLL_TEST_DEVICE=cpu \
    OMP_NUM_THREADS=1 timeout 180 "$python" "$here/torch_cuda_ranks.py" > "$out/rank$r.log" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
cat "$out/rank0.log" "$out/rank1.log"
[ "$rc" -eq 0 ] && [ "$(cat "$out"/rank*.log | grep -c 'CUDA OK')" -eq 2 ] || { echo "FAILED"; exit 1; }
echo "build_for_python_check.sh: the package built for $python passed on 2 ranks"
