#!/usr/bin/env bash
# COLL_TRACE_FILE end to end: 3 ranks under collrun write one trace each; tools/op_trace.py
# summarises them (every rank's 1 MiB all-reduces listed, and the 8 B ones that one host runs on
# its shared-memory board) and merges them into one valid file.
#   op_trace_e2e.sh BINDIR
set -euo pipefail
bindir=${1:?bindir}
tool=$(cd "$(dirname "$0")/../.." && pwd)/tools/op_trace.py
out=$(mktemp -d "${TMPDIR:-/tmp}/coll-op-trace.XXXXXX")
trap 'rm -rf "$out"' EXIT
COLL_TRACE_FILE=$out/t timeout 120 "$bindir/collrun" -n 3 "$bindir/all_reduce_perf" -b 8 -e 1M -f 131072 -n 4 -w 1 -c 1 >"$out/log" 2>&1 ||
  { cat "$out/log"; exit 1; }
files=("$out"/t.*.r*.json)
[[ ${#files[@]} == 3 ]] || { echo "FAIL: expected 3 trace files, got: ${files[*]}"; exit 1; }
/usr/bin/python3 "$tool" summary "${files[@]}" --min-bytes 1M >"$out/summary"
for r in 0 1 2; do
  grep -q "^# rank $r of world #0 .*: .* ops" "$out/summary" || { cat "$out/summary"; echo "FAIL: no rank $r in the summary"; exit 1; }
done
[[ $(grep -c " allreduce  *1048576 " "$out/summary") -ge 15 ]] || { cat "$out/summary"; echo "FAIL: 1 MiB all-reduces missing"; exit 1; }
/usr/bin/python3 "$tool" summary "${files[@]}" >"$out/all_sizes"
[[ $(grep -c " allreduce  *8 board" "$out/all_sizes") -ge 15 ]] || { cat "$out/all_sizes"; echo "FAIL: 8 B board all-reduces missing"; exit 1; }
/usr/bin/python3 "$tool" merge "$out/all.json" "${files[@]}" >/dev/null
/usr/bin/python3 -c "import json,sys; t=json.load(open(sys.argv[1])); assert {e['pid'] for e in t['traceEvents']} == {0,1,2}" \
  "$out/all.json" || { echo "FAIL: the merged trace lacks a rank"; exit 1; }
echo "PASS: 3 traces, summarised and merged"
