#!/usr/bin/env bash
# Every GPU check of the project in one bounded run (about 5 minutes), for a lent GPU machine:
# the device kernels' and the cuda_ipc path's tests, all-reduce / all-gather / reduce-scatter
# busbw with 2, 4 and 8 ranks sharing GPU 0 beside the GPU's own device-to-device copy rate
# (all_reduce_perf's header), the same through torch's backend "coll" (a coll package built
# here against this machine's torch), and torch's CUDA-tensor tests.
#
#   bench/scripts/gpu_check.sh BIN LIB [BASE]
#
# BIN: collrun, the *_perf programs and the cuda tests; LIB: libcoll.so (and, in LIB/deps, the
# shared libraries they need that the machine may lack); BASE: optional older *_perf programs
# to measure beside BIN's in the same run. Logs go to $LOGS (default /tmp/gpu_check), and all of
# them into one archive, $OUT/gpu_logs.tar.gz (OUT defaults to LOGS: the device tool brings back
# only a few files, so give it the archive alone). PARTS (default "tests perf torch") picks what
# runs. Figures of 2026-12-04: docs/perf/cuda/README.md.
# bench/scripts/gpu_pack.sh makes BIN, LIB and BASE from a CUDA build on another machine.
set -u
BIN=${1:?BIN}; LIB=${2:?LIB}; BASE=${3:-}
LOGS=${LOGS:-/tmp/gpu_check}
ARCHIVE_DIR=${OUT:-$LOGS}
PARTS=${PARTS:-tests perf torch}
want() { [[ " $PARTS " == *" $1 "* ]]; }
mkdir -p "$LOGS"
export LD_LIBRARY_PATH="$LIB/deps:$LIB:${LD_LIBRARY_PATH:-}"
step() { echo; echo "=== $* ($(date +%T))"; }
run() {  # run LOG SECONDS CMD...: the command's output to $LOGS/LOG, its tail and status here
  local log=$1 limit=$2; shift 2
  timeout -k 5 "$limit" "$@" >"$LOGS/$log" 2>&1
  local rc=$?
  echo "--- $log: exit $rc"
  [ $rc -eq 0 ] || tail -6 "$LOGS/$log"
  return $rc
}
perf_rows() {  # the 8-byte and 256 MiB rows of a perf log (the whole table stays in $LOGS)
  grep -E "^\[0\] +(8|268435456) " "$LOGS/$1" | sed 's/^\[0\] *//'
}

step machine
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "cores: $(nproc)"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1 | tail -1

if want tests; then
step device kernels
run cuda_reduce.log 120 "$BIN/cuda_reduce_test"
tail -3 "$LOGS/cuda_reduce.log"
grep -E "FAILED|Failure" "$LOGS/cuda_reduce.log" | head -5

step cuda_ipc and staged collectives, 2 and 3 ranks
run cuda_coll_ipc.log 180 "$BIN/cuda_collectives_test"
tail -2 "$LOGS/cuda_coll_ipc.log"
run cuda_coll_staged.log 180 "$BIN/cuda_collectives_test" --env=COLL_CUDA_IPC=0 --env=COLL_CUDA_STAGING_CHUNK=16384
tail -2 "$LOGS/cuda_coll_staged.log"

step 8-byte all-reduce, 2 ranks, traced
run trace_new.log 60 env COLL_DEBUG=TRACE COLL_DEBUG_SUBSYS=CUDA "$BIN/collrun" --kill-after 3 -n 2 "$BIN/all_reduce_perf" -b 8 -e 8 -n 3 -w 1 -X 1
grep "allreduce of 8 B" "$LOGS/trace_new.log" | tail -2
if [ -n "$BASE" ]; then
  run trace_base.log 60 env COLL_DEBUG=TRACE COLL_DEBUG_SUBSYS=CUDA "$BIN/collrun" --kill-after 3 -n 2 "$BASE/all_reduce_perf" -b 8 -e 8 -n 3 -w 1 -X 1
  grep "allreduce of 8 B" "$LOGS/trace_base.log" | tail -2
fi

fi

if want perf; then
step busbw, ranks sharing GPU 0 through cuda_ipc
"$BIN/all_reduce_perf" -b 256M -e 256M -n 1 -w 0 -X 1 2>&1 | grep -h "Buffers in GPU"
echo "# size count type redop root | out of place: time algbw busbw wrong | in place: time algbw busbw wrong"
for n in 2 4 8; do
  for c in all_reduce all_gather reduce_scatter; do
    echo "# $c, $n ranks"
    run "${c}_${n}.log" 90 "$BIN/collrun" --kill-after 3 -n "$n" "$BIN/${c}_perf" -b 8 -e 256M -f 32 -X 1 -n 20 -w 5
    perf_rows "${c}_${n}.log"
    if [ -n "$BASE" ]; then
      echo "# $c, $n ranks, BASE"
      run "${c}_${n}_base.log" 90 "$BIN/collrun" --kill-after 3 -n "$n" "$BASE/${c}_perf" -b 8 -e 256M -f 32 -X 1 -n 20 -w 5
      perf_rows "${c}_${n}_base.log" | grep -v "Buffers in GPU"
    fi
  done
done

fi

if want torch; then
step the coll package, built against the torch here
PKG="$LOGS/python"
[ -e "$LIB/libcoll.so" ] || cp "$LIB/libcoll.so.0" "$LIB/libcoll.so"
run build_python.log 240 python3 bindings/python/build_for_python.py --lib "$LIB" --out "$PKG"
tail -3 "$LOGS/build_python.log"

step torch: busbw through backend coll
PYTHONPATH="$PKG" run torch_busbw.log 150 python3 bench/torch_cuda_busbw.py --ranks 2 4 --sizes 8M 256M
grep -E "^#|^ +[0-9]" "$LOGS/torch_busbw.log"
step torch: CUDA-tensor tests
PYTHONPATH="$PKG" run torch_cuda.log 300 python3 -m pytest -q -rs -x bindings/python/tests/test_torch_cuda.py
tail -3 "$LOGS/torch_cuda.log"
fi
step done
mkdir -p "$ARCHIVE_DIR"
tar -C "$LOGS" -czf "$ARCHIVE_DIR/gpu_logs.tar.gz" --exclude=python --exclude="*.tar.gz" .
