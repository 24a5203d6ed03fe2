#!/bin/bash
# CTest's entry to the Python tests: run_pytest.sh PYTHON TESTFILE. Exits 77, which ctest's
# SKIP_RETURN_CODE shows as "Skipped" (bindings/CMakeLists.txt), when nothing was tested:
# PYTHON has no pytest or numpy; pytest collected nothing (its exit code 5, e.g. a module
# skipped by importorskip); or pytest passed with every test skipped (it exits 0 then). A run
# where something passed and something skipped passes; the skip reasons are printed (-rs).
set -u
python=$1 target=$2
if ! "$python" -c 'import pytest, numpy' 2>/dev/null; then
  echo "run_pytest.sh: $python lacks pytest or numpy (apt-get install python3-pytest python3-numpy): skipped"
  exit 77
fi
report=$(mktemp --tmpdir run_pytest.XXXXXX.xml)
trap 'rm -f "$report"' EXIT
"$python" -m pytest -q -rs -p no:cacheprovider --junitxml="$report" "$target"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "run_pytest.sh: pytest collected no test in $target: skipped"
  exit 77
fi
if [ "$rc" -eq 0 ]; then
  # tests= and skipped= of the JUnit report, summed over its suites.
  counts=$("$python" - "$report" <<'EOF'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.iter("testsuite")
tests = skipped = 0
for s in suites:
    tests += int(s.get("tests", 0))
    skipped += int(s.get("skipped", 0))
print(tests, skipped)
EOF
) || { echo "run_pytest.sh: cannot read pytest's report $report"; exit 1; }
  read -r tests skipped <<<"$counts"
  if [ "$tests" -gt 0 ] && [ "$skipped" -eq "$tests" ]; then
    echo "run_pytest.sh: all $tests tests in $target skipped: skipped"
    exit 77
  fi
fi
exit "$rc"
