#!/bin/bash
# coll as someone else's dependency: install the build into a fresh temporary prefix, build
# examples/consumer (its own CMake project, find_package(coll)) and a plain C program with
# `cc $(pkg-config --cflags --libs coll)` against it, and run both under collrun. Also: the
# consumer without a launcher gets the clear init error, and headers of another major version
# are refused at init with a version-mismatch error.
# usage: consumer_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d /tmp/coll-consumer.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

step() { echo "--- $*"; }
step "cmake --install into $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
test -f "$prefix/lib/libcoll.so.0" && test -f "$prefix/lib/libcoll.a" && test -f "$prefix/include/coll/coll.h"
test -x "$prefix/bin/collrun" && test -x "$prefix/bin/all_reduce_perf"
if ls "$prefix/include/coll" | grep -qv '\.h$'; then echo "non-header files installed under include/coll" >&2; exit 1; fi
# No private header may leak through a public one: every include of an installed header is
# either a system header or another installed coll/ header.
if grep -h '#include "' "$prefix"/include/coll/*.h | grep -v '"coll/'; then
  echo "an installed public header includes a private one" >&2; exit 1
fi

step "examples/consumer with find_package(coll)"
cmake -S "$src/examples/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_RPATH="$prefix/lib" >"$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; exit 1; }
grep 'found coll' "$work/consumer.log"
cmake --build "$work/consumer" >/dev/null
ldd "$work/consumer/consumer" | grep "libcoll.so.0 => $prefix/lib/libcoll.so.0"
timeout 120 "$prefix/bin/collrun" -n 2 "$work/consumer/consumer"

step "plain C with pkg-config"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
pkg-config --modversion coll
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror "$src/examples/consumer/consumer.c" $(pkg-config --cflags --libs coll) \
   -Wl,-rpath,"$prefix/lib" -o "$work/consumer_c"
timeout 120 "$prefix/bin/collrun" -n 3 "$work/consumer_c"

step "without a launcher: the clear init error"
if env -u COLL_RANK -u RANK -u OMPI_COMM_WORLD_RANK -u PMI_RANK -u SLURM_PROCID timeout 60 "$work/consumer_c" \
     >"$work/alone.out" 2>&1; then
  echo "the consumer ran without a launcher" >&2; exit 1
fi
cat "$work/alone.out"
grep -qi 'launcher\|environment' "$work/alone.out"

step "headers of another major version are refused at init"
cat >"$work/mismatch.c" <<'C'
#include <coll/coll.h>
#include <stdio.h>
int main(void) {
  collComm_t comm;
  collResult_t r = collCommInitFromEnvVersioned(&comm, COLL_VERSION(COLL_VERSION_MAJOR + 1, 0, 0));
  printf("%s: %s\n", collGetErrorString(r), collGetLastError());
  return r == collUnsupported ? 0 : 1;
}
C
# shellcheck disable=SC2046
cc "$work/mismatch.c" $(pkg-config --cflags --libs coll) -Wl,-rpath,"$prefix/lib" -o "$work/mismatch"
"$work/mismatch" | tee "$work/mismatch.out"
grep -q "version mismatch.*coll $(pkg-config --modversion coll | cut -d. -f1 | awk '{print $1 + 1}').0.0's headers.*$prefix/lib/libcoll.so.0" "$work/mismatch.out"
echo "consumer test: ok"
