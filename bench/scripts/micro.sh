#!/bin/bash
# The micro-benchmarks in one go, for docs/PERFORMANCE.md: reduction kernels per dtype and op
# beside memcpy (GB/s of output), transport ping-pong latency and streaming bandwidth per
# transport, and the selector's cost per call. Run on a quiet machine; prints plain text.
# usage: bench/scripts/micro.sh [--build DIR] [--out DIR]   (--out: also keep each program's output)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build out=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --out) out=$2; mkdir -p "$out"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
keep() { if [[ -n $out ]]; then tee "$out/$1"; else cat; fi; }

echo "# $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "## reduction kernels (GB/s of output; 256 KiB stays in cache, 64 MiB streams from DRAM)"
timeout 300 "$build/bin/reduce_bench" --benchmark_format=console 2>/dev/null | keep reduce_bench.txt |
  awk '/^(memcpy|reduceInto|reduce3)/ {v = $NF; sub(/bytes_per_second=/, "", v); sub(/G\/s/, "", v)
                                       sub(/\/min_time:.*/, "", $1); printf "%-28s %8.2f GB/s\n", $1, v}'
echo "## transports (two forked ranks on this host)"
timeout 300 "$build/bin/transport_pingpong" 2>&1 | keep transport_pingpong.txt
echo "## selector and schedule builders (per call)"
timeout 300 "$build/bin/selector_bench" --benchmark_format=console 2>/dev/null | keep selector_bench.txt |
  awk '/^BM_/ {print $1, $2, $3}'
