#!/bin/bash
# The two commands a newcomer runs on a fresh Debian 12 machine:
#   tools/dev.sh bench   install what is missing, build, run a 4-rank all-reduce and broadcast
#                        benchmark on this machine through collrun (nccl-tests tables)
#   tools/dev.sh test    install what is missing, build, run every test (ctest)
#   tools/dev.sh build   install what is missing (the venv too), build; no tests
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

# Everything the build, the tests and the benchmarks use, by Debian package. tools/check_deps.py
# (run by .ci/run after the build) fails when the build used a header or library from a
# package that is neither here nor a dependency of one listed here.
packages=(build-essential cmake ninja-build pkg-config libboost-dev zlib1g-dev  # the library, trainer
          libgtest-dev libgmock-dev libbenchmark-dev python3-pytest            # tests, micro-benchmarks
          libhwloc-dev libucx-dev libibverbs-dev libpmix-dev                   # optional: topology, ucx, verbs, PMIx
          pybind11-dev python3-dev python3-numpy python3-torch libtorch-dev    # optional: Python, torch backend
          python3-venv python3-setuptools python3-wheel                        # pip install ./bindings/python
          python3-sklearn                                                      # the trainer's digits data
          openmpi-bin libopenmpi-dev mpich libmpich-dev                        # launchers and peer benchmarks
          iperf3 iproute2 procps python3-matplotlib)                           # netcluster, plots

# Optional, installed when apt-get can, never required: a real Slurm for the launcher matrix
# (tests/launcher/launcher_matrix.sh skips its Slurm runs without them), nftables for
# coll-doctor's firewalled-host case (tests/launcher/doctor_faults.sh skips it without nft),
# gdb for the stacks of a test's rank still running at its deadline (tests/multirank/rank_runner.cc),
# ccache for compiles an earlier build on this machine already made (use_ccache below).
# No headers or libraries.
optional_packages=(slurm-wlm munge nftables gdb ccache)

install_missing() {
  local missing=() optional=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  for p in "${optional_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || optional+=("$p")
  done
  [[ ${#missing[@]} -eq 0 && ${#optional[@]} -eq 0 ]] && return 0
  local sudo=; [[ $EUID -ne 0 ]] && sudo=sudo
  $sudo apt-get update -qq
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "dev.sh: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  if [[ ${#optional[@]} -gt 0 ]]; then
    echo "dev.sh: installing optional ${optional[*]}"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${optional[@]}" >/dev/null ||
      echo "dev.sh: could not install ${optional[*]} (optional: the Slurm launcher tests, the firewalled-host case and stacks of hung test ranks will be skipped)"
  fi
}

# The Python packages of the registry (PyPI) the tests use, in venvs outside the repository,
# made once per machine: torch 2.x (the CUDA build pip serves, a few GB; torch 2.x's own
# distributed suite and the pip test run on it), numpy, and what builds coll's pip package.
# COLL_VENV: the registry's newest torch (default /opt/coll-venv). COLL_VENV_OLDER: an older
# torch 2.x, 2.4.1, the last built with the old C++ ABI (default /opt/coll-venv-torch2.4); the
# pip test runs on both. COLL_VENV_TF: the registry's TensorFlow (tensorflow-cpu; default
# /opt/coll-venv-tf), for coll.tensorflow's tests. Tests find them through the same variables.
venv=${COLL_VENV:-/opt/coll-venv}
venv_older=${COLL_VENV_OLDER:-/opt/coll-venv-torch2.4}
venv_tf=${COLL_VENV_TF:-/opt/coll-venv-tf}
pip_packages=(numpy pytest build scikit-build-core pybind11)

# ensure_venv DIR TORCH_REQUIREMENT [MORE...]: makes DIR with torch, pip_packages and MORE where
# missing.
ensure_venv() {
  local dir=$1 torch_req=$2 more=("${@:3}")
  if [[ ! -x $dir/bin/python ]]; then
    echo "dev.sh: making $dir ($torch_req and what pip builds coll with)"
    python3 -m venv "$dir"
  fi
  local want
  want=$("$dir/bin/python" - "$torch_req" "${pip_packages[@]}" "${more[@]}" <<'PY'
import importlib.util, sys
names = {"scikit-build-core": "scikit_build_core", "tensorflow-cpu": "tensorflow"}
print(" ".join(p for p in sys.argv[1:] if importlib.util.find_spec(names.get(p, p.split("=")[0])) is None))
PY
)
  [[ -z $want ]] && return 0
  echo "dev.sh: pip installing $want into $dir"
  "$dir/bin/pip" install -q --progress-bar off $want
}

ensure_venvs() {
  ensure_venv "$venv" torch torchft  # torchft (torch >= 2.7): tests/torch2/torchft_check.py
  ensure_venv "$venv_older" torch==2.4.1
  ensure_venv "$venv_tf" tensorflow-cpu
}

# ccache, where installed: a fresh clone's build (CI's), and the wheels the pip and TensorFlow
# tests build, take what an earlier build of the same sources on this machine compiled from its
# cache, about half of a CI run otherwise. CMake reads the launcher from the environment (the
# tests' nested builds too); paths under the checkout are hashed relative to the build folder,
# so a clone elsewhere hits, and the folder itself is left out of the hash (NOHASHDIR: debug
# info then names the folder of the compile that filled the cache). COLL_CCACHE=0: no ccache.
use_ccache() {
  if [[ ${COLL_CCACHE:-1} == 0 ]] || ! command -v ccache >/dev/null; then
    unset CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER; return 0
  fi
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=true
}

# configure_and_build [TARGET...]: configures, then builds the named targets (all without any).
configure_and_build() {
  use_ccache
  # Given explicitly: the environment only seeds a new build folder's cache, and an empty value
  # takes away a launcher an earlier configure set where ccache is gone now.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER_LAUNCHER="${CMAKE_C_COMPILER_LAUNCHER:-}" -DCMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-}"
  if [[ $# -gt 0 ]]; then cmake --build "$build" -j "$(nproc)" --target "$@"; else cmake --build "$build" -j "$(nproc)"; fi
}

case $verb in
  bench)
    [[ $install == 1 ]] && install_missing
    configure_and_build collrun all_reduce_perf broadcast_perf  # only what it runs
    "$build/bin/collrun" -n 4 "$build/bin/all_reduce_perf" -b 8 -e 64M -f 4 -n 10 -w 2 -c 1
    "$build/bin/collrun" -n 4 "$build/bin/broadcast_perf" -b 8 -e 64M -f 4 -n 10 -w 2 -c 1
    ;;
  build)
    [[ $install == 1 ]] && install_missing && ensure_venvs
    configure_and_build
    ;;
  test)
    [[ $install == 1 ]] && install_missing && ensure_venvs
    export COLL_VENV=$venv COLL_VENV_OLDER=$venv_older COLL_VENV_TF=$venv_tf
    configure_and_build
    # On failure, each failed test's last lines again at the end, where a CI log's tail shows them.
    ctest --test-dir "$build" --output-on-failure --timeout 600 -j 2 ||
      { "$root/tools/ctest_failures.sh" "$build"; exit 1; }
    ;;
  *)
    sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
