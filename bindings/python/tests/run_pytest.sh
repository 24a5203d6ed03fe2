#!/bin/bash
# CTest's entry to the Python tests: run_pytest.sh PYTHON TESTDIR. Exits 77 (skipped) when
# PYTHON has no pytest or numpy.
set -u
python=$1 dir=$2
if ! "$python" -c 'import pytest, numpy' 2>/dev/null; then
  echo "run_pytest.sh: $python lacks pytest or numpy (apt-get install python3-pytest python3-numpy): skipped"
  exit 77
fi
exec "$python" -m pytest -q -p no:cacheprovider "$dir"
