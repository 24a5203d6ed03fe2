#!/usr/bin/env bash
# The perf programs' hint that a short warm-up may time ops before coll's shared memory settles
# (tools/perf_cli/perf_report.cc): printed by the collectives that read reused send buffers by
# CMA (all-gather here) when -w is under 10 and ops reach 256 KiB; not with -w 10, not below
# 256 KiB, and never by a reducing collective (all-reduce).
#   perf_warmup_hint_e2e.sh BIN_DIR
set -uo pipefail
bin=${1:?directory holding collrun and the perf programs}
fail=0
hint() {  # hint PROGRAM FLAGS...: how many hint lines the job printed, or "not run" if it did not finish
  local text
  text=$(timeout 60 "$bin/collrun" -n 2 "$bin/$1" -n 1 -c 1 "${@:2}" 2>&1)
  if ! grep -q "Collective test concluded" <<<"$text"; then echo "not run"; return; fi
  grep -c "may be timed before shared memory" <<<"$text"
}
expect() {  # expect WANT WHAT PROGRAM FLAGS...
  local got
  got=$(hint "${@:3}")
  if [[ $got != "$1" ]]; then
    echo "FAIL: $2: $got hint lines, want $1 ($3 ${*:4})"
    fail=1
  else
    echo "ok: $2"
  fi
}
expect 1 "all-gather of 1 MiB with -w 1 warns" all_gather_perf -b 1M -e 1M -w 1
expect 0 "all-gather with -w 10 does not" all_gather_perf -b 1M -e 1M -w 10
expect 0 "all-gather under 256 KiB does not" all_gather_perf -b 8 -e 128K -w 1
expect 0 "all-reduce, which reduces, does not" all_reduce_perf -b 1M -e 1M -w 1
exit $fail
