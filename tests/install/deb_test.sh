#!/bin/bash
# cpack -G DEB makes a Debian package; dpkg installs it into a throwaway root (dpkg --root with
# an admin folder of its own, so this machine's package database is untouched), and the
# consumer project builds against that root and runs under its collrun.
# usage: deb_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d /tmp/coll-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "--- cpack -G DEB"
(cd "$build" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log") || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/pkg/*.deb)
dpkg-deb --info "$deb" | grep -E 'Package|Version|Depends|Installed-Size'
dpkg-deb --contents "$deb" | awk '{print $6}' | grep -E 'libcoll|coll.pc|collConfig|/coll/coll.h|bin/collrun'

echo "--- dpkg -i into a throwaway root"
root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
# --force-depends: the root's own database knows none of the dependencies (this machine has
# them); --force-script-chrootless: no maintainer script needs a chroot.
dpkg --root="$root" --force-depends --force-script-chrootless --no-triggers -i "$deb" >"$work/dpkg.log" 2>&1 ||
  { cat "$work/dpkg.log"; exit 1; }
dpkg --root="$root" -l coll | tail -1
prefix=$root/usr
test -f "$prefix/lib/libcoll.so.0"

echo "--- the consumer against the installed package"
cmake -S "$src/examples/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_RPATH="$prefix/lib" >"$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; exit 1; }
grep 'found coll' "$work/consumer.log"
cmake --build "$work/consumer" >/dev/null
timeout 120 "$prefix/bin/collrun" -n 2 "$work/consumer/consumer"
echo "deb test: ok"
