#!/bin/bash
# The two commands a newcomer runs on a fresh Debian 12 machine:
#   tools/dev.sh bench   install what is missing, build, run a 4-rank all-reduce and broadcast
#                        benchmark on this machine through collrun (nccl-tests tables)
#   tools/dev.sh test    install what is missing, build, run every test (ctest)
# Options: --build DIR (default build), --no-install (skip apt-get).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build install=1 verb=${1:-}
[[ $# -gt 0 ]] && shift
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --no-install) install=0; shift ;;
    *) echo "dev.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

# Build needs, then what the tests and benchmarks compare against (launchers, peers).
packages=(build-essential cmake ninja-build pkg-config libboost-dev libgtest-dev libgmock-dev
          libbenchmark-dev openmpi-bin libopenmpi-dev mpich python3-torch libtorch-dev python3-numpy python3-pytest
          pybind11-dev iperf3 libucx-dev libibverbs-dev
          iproute2 procps python3-matplotlib
          zlib1g-dev python3-sklearn)  # the trainer reads sklearn's digits.csv.gz with zlib

install_missing() {
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  echo "dev.sh: installing ${missing[*]}"
  local sudo=; [[ $EUID -ne 0 ]] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

configure_and_build() {
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build "$build" -j "$(nproc)"
}

case $verb in
  bench)
    [[ $install == 1 ]] && install_missing
    configure_and_build
    "$build/bin/collrun" -n 4 "$build/bin/all_reduce_perf" -b 8 -e 64M -f 4 -n 10 -w 2 -c 1
    "$build/bin/collrun" -n 4 "$build/bin/broadcast_perf" -b 8 -e 64M -f 4 -n 10 -w 2 -c 1
    ;;
  test)
    [[ $install == 1 ]] && install_missing
    configure_and_build
    ctest --test-dir "$build" --output-on-failure --timeout 600 -j 2
    ;;
  *)
    sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
