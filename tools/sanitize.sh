#!/usr/bin/env bash
# Builds coll under a sanitizer and runs test labels there.
#
#   tools/sanitize.sh address|thread|undefined [ctest args...]
#
# address: build-asan (ASan + UBSan); thread: build-tsan; undefined: build-ubsan. Default ctest
# args: -L 'unit|multirank|fault' (add -R/-E to run a subset). Only the targets the tests need
# are built (no benchmarks, trainer or Python module), niced, with COLL_SANITIZE_JOBS (2) jobs;
# COLL_SANITIZE_TARGETS="a b c" builds only those (tests of unbuilt programs are not run).
# Every report fails its test: a sanitizer that finds something makes the rank exit non-zero
# (halt_on_error), and the rank runner reports that rank as failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:?usage: sanitize.sh address|thread|undefined [ctest args...]}
shift
case $kind in
  address) build=$root/build-asan ;;
  thread) build=$root/build-tsan ;;
  undefined) build=$root/build-ubsan ;;
  *) echo "sanitize.sh: unknown sanitizer $kind" >&2; exit 2 ;;
esac
ctest_args=("$@")
[[ ${#ctest_args[@]} -eq 0 ]] && ctest_args=(-L 'unit|multirank|fault')

# The programs behind the unit, multirank and fault labels, the soak run and the fuzz replays.
targets=(reduce_test types_test store_test schedule_test bootstrap_test c_api_test selector_test
         ledger_test c_api_bad_input_test
         allreduce_test broadcast_test ordering_test c_api_multirank_test collectives_test
         fault_test ledger_fault_test call_check_test bad_input_test hostile_peer_test
         store_host_test shrink_fault_test shrink_test
         collrun coll_soak
         fuzz_store_protocol fuzz_socket_wire fuzz_algo_override fuzz_slurm_hostlist fuzz_ledger_snapshot)

[[ -n ${COLL_SANITIZE_TARGETS:-} ]] && read -r -a targets <<<"$COLL_SANITIZE_TARGETS"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLL_SANITIZE="$kind" \
  -DCOLL_WITH_PYTHON=OFF -DCOLL_WITH_CUDA=OFF >/dev/null
known=$(cmake --build "$build" --target help)
existing=()
for t in "${targets[@]}"; do
  grep -q "^$t:" <<<"$known" && existing+=("$t")
done
nice -n 10 cmake --build "$build" -j "${COLL_SANITIZE_JOBS:-2}" --target "${existing[@]}"

# halt_on_error: the first report ends the process with an error, so no finding passes
# silently inside a forked rank. die_after_fork=0: a few tests fork inside a rank that runs
# threads (BadInput.ForkedChild...); the rank runner has none (its store is a process).
# UCX_MEM_MMAP_HOOK_MODE=none (thread only): libucs patches mmap/munmap/madvise at load, and a
# thread's exit then takes ucm's rwlock through TSan's interceptor after TSan dropped that
# thread's state: every forked-rank test died with SIGSEGV in __tsan::MutexPreReadLock.
[[ $kind == thread ]] && export UCX_MEM_MMAP_HOOK_MODE=${UCX_MEM_MMAP_HOOK_MODE:-none}
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:die_after_fork=0:second_deadlock_stack=1}
ctest --test-dir "$build" --output-on-failure -j "${COLL_SANITIZE_JOBS:-2}" "${ctest_args[@]}"
