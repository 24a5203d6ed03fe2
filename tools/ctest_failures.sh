#!/bin/bash
# Prints the last lines each failed test wrote, from ctest's LastTest.log, so that the tail of a
# long run (what CI keeps) says why a test failed, not only which.
# usage: ctest_failures.sh BUILD_DIR [LINES]   (default 60 lines a test)
set -u
build=${1:?build dir} lines=${2:-60}
log=$build/Testing/Temporary/LastTest.log
failed=$build/Testing/Temporary/LastTestsFailed.log
[[ -f $log && -f $failed ]] || exit 0
while IFS=: read -r _ name; do
  echo "===== the end of what ${name} printed (${log}) ====="
  # A test's block runs from "N/M Testing: NAME" to its "<end of output>".
  awk -v t="$name" '$0 ~ "^[0-9]+/[0-9]+ Testing: " && $3 == t { on = 1; next }
                    on && /^<end of output>/ { exit } on' "$log" | tail -n "$lines"
done <"$failed"
