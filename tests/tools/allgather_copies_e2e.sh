#!/usr/bin/env bash
# bench/micro/allgather_copies, bench/compare.py's bound for an all-gather on one host: 2 and 3
# processes, odd sizes, out of place and in place, print a time and a busbw (the program itself
# fails if any output byte is wrong); bad arguments are refused.
#   allgather_copies_e2e.sh ALLGATHER_COPIES
set -uo pipefail
prog=${1:?path to allgather_copies}
check() {  # check RANKS BYTES [in-place]
  local text
  text=$(timeout 60 "$prog" "$1" "$2" 3 ${3:-}) || { echo "$text"; echo "FAIL: $*: exit status $?"; exit 1; }
  echo "$text" | grep -Eq "^allgather_copies: $1 processes, [0-9]+ bytes${3:+ in place}: [0-9.]+ us per op, busbw [0-9.]+ GB/s$" ||
    { echo "$text"; echo "FAIL: $*: unexpected output"; exit 1; }
}
check 2 1000003
check 3 4M
check 3 1000003 in-place
check 2 3
for bad in "0 1M" "2 1" "2 1M 0" "2 1M 100000" "2 1M 3 sideways" "2 lots"; do
  # shellcheck disable=SC2086
  timeout 20 "$prog" $bad >/dev/null 2>&1
  [[ $? == 2 ]] || { echo "FAIL: '$bad' was not refused with status 2"; exit 1; }
done
echo "allgather_copies: ok"
