#!/usr/bin/env bash
# Builds coll under a sanitizer and runs test labels there, through the CMake presets
# (CMakePresets.json), which are the one definition of the build and of the sanitizer options:
#
#   tools/sanitize.sh address|thread|undefined [ctest args...]
#   (the same as: cmake --preset asan && cmake --build --preset asan && ctest --preset asan)
#
# address: preset asan, build-asan (ASan + UBSan); thread: tsan, build-tsan; undefined: ubsan,
# build-ubsan. The test preset runs the labels unit|multirank|fault|fuzz; ctest args given here
# narrow that (ctest ANDs label filters): e.g. -L 'multirank|fault', or -R/-E for a subset.
# The build preset builds only the programs those tests need (no benchmarks, trainer or Python
# module), niced here, with COLL_SANITIZE_JOBS (2) jobs; COLL_SANITIZE_TARGETS="a b c" builds
# only those (tests of unbuilt programs are not run). Every report fails its test: the presets
# set halt_on_error, so a rank with a finding exits non-zero and the rank runner reports it as
# failed. The caller's ASAN_OPTIONS / UBSAN_OPTIONS / TSAN_OPTIONS are appended to the
# presets' and so win.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:?usage: sanitize.sh address|thread|undefined [ctest args...]}
shift
case $kind in
  address) preset=asan ;;
  thread) preset=tsan ;;
  undefined) preset=ubsan ;;
  *) echo "sanitize.sh: unknown sanitizer $kind" >&2; exit 2 ;;
esac
jobs=${COLL_SANITIZE_JOBS:-2}
cd "$root"  # presets are found in the current directory

cmake --preset "$preset" >/dev/null
target_args=()
if [[ -n ${COLL_SANITIZE_TARGETS:-} ]]; then
  read -r -a wanted <<<"$COLL_SANITIZE_TARGETS"
  known=$(cmake --build --preset "$preset" --target help)
  for t in "${wanted[@]}"; do
    if grep -q "^$t:" <<<"$known"; then target_args+=(--target "$t"); else echo "sanitize.sh: no target $t" >&2; fi
  done
fi
nice -n 10 cmake --build --preset "$preset" -j "$jobs" "${target_args[@]}"
ctest --preset "$preset" -j "$jobs" "$@"
