#!/usr/bin/env bash
# Packs what bench/scripts/gpu_check.sh needs from a CUDA build on this machine, for a GPU
# machine that lacks the build's dependencies: stripped programs in DEST/new, libcoll.so.0 and
# the shared libraries it needs (but the C and C++ runtimes) in DEST/lib. About 40 MiB.
#
#   bench/scripts/gpu_pack.sh [BUILD] [DEST]      (defaults: build, build-gpu)
#   then on the GPU machine: bench/scripts/gpu_check.sh DEST/new DEST/lib
set -eu
BUILD=${1:-build}; DEST=${2:-build-gpu}
cmake --build "$BUILD" --target collrun all_reduce_perf all_gather_perf reduce_scatter_perf \
  cuda_reduce_test cuda_collectives_test coll_shared
rm -rf "$DEST/new" "$DEST/lib"
mkdir -p "$DEST/new" "$DEST/lib/deps"
for b in collrun all_reduce_perf all_gather_perf reduce_scatter_perf cuda_reduce_test cuda_collectives_test; do
  strip -o "$DEST/new/$b" "$BUILD/bin/$b"
done
strip --strip-unneeded -o "$DEST/lib/libcoll.so.0" "$BUILD/lib/libcoll.so.0"
ldd "$BUILD/lib/libcoll.so.0" | awk '$3 ~ /^\// {print $3}' | grep -vE "/lib(c|m|stdc\+\+|gcc_s)\.so" |
  while read -r lib; do cp -L "$lib" "$DEST/lib/deps/"; done
du -sh "$DEST"
