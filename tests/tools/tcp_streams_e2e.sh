#!/usr/bin/env bash
# bench/tcp_streams, the CPU-bound regime's limit in bench/compare.py, on loopback: a ring of 3
# and a chain of 3 carry every byte and print a rate, also walking a footprint that the bytes do
# not fill evenly, and adding what they receive into it, and with the copies and adds inside a
# host beside them; a bad footprint or ratio is refused; a peer that never listens fails within
# the timeout and says which step failed.
#   tcp_streams_e2e.sh TCP_STREAMS
set -uo pipefail
prog=${1:?path to tcp_streams}
out=$(mktemp -d "${TMPDIR:-/tmp}/coll-tcp-streams.XXXXXX")
trap 'rm -rf "$out"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
p=($(port) $(port) $(port))
run3() {  # run3 ring|chain [FLAGS]: three processes, host i listens on p[i], sends to host i+1
  local pids=() extra=("${@:2}")
  for i in 0 1 2; do
    local args=(--bytes 8M --timeout 20 "${extra[@]}")
    [[ $1 == ring || $i -gt 0 ]] && args+=(--listen "${p[$i]}")
    [[ $1 == ring || $i -lt 2 ]] && args+=(--to "127.0.0.1:${p[$(( (i + 1) % 3 ))]}")
    timeout 60 "$prog" "${args[@]}" >"$out/$1.$i" 2>&1 & pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || { cat "$out"/$1.*; echo "FAIL: $1: a stream failed"; exit 1; }; done
}
run3 ring
[[ $(cat "$out"/ring.* | grep -c "sent 8388608 received 8388608 bytes in .* GB/s") == 3 ]] ||
  { cat "$out"/ring.*; echo "FAIL: ring: not every stream carried 8 MiB each way"; exit 1; }
run3 ring --footprint 6M  # 3 MiB each way, cycled: 8 MiB is 2 laps and 2 MiB more
[[ $(cat "$out"/ring.* | grep -c "sent 8388608 received 8388608 bytes in .* GB/s") == 3 ]] ||
  { cat "$out"/ring.*; echo "FAIL: ring walking 6 MiB: not every stream carried 8 MiB each way"; exit 1; }
run3 ring --footprint 6M --reduce  # each piece added into the footprint after it arrived
[[ $(cat "$out"/ring.* | grep -c "sent 8388608 received 8388608 bytes in .* GB/s") == 3 ]] ||
  { cat "$out"/ring.*; echo "FAIL: ring that reduces: not every stream carried 8 MiB each way"; exit 1; }
run3 ring --footprint 6M --copy 2 --add 1.5  # work inside the host beside the streams, 28 MiB
[[ $(cat "$out"/ring.* | grep -c "sent 8388608 received 8388608 bytes in .* GB/s") == 3 ]] ||
  { cat "$out"/ring.*; echo "FAIL: ring with work inside the host: not every stream carried 8 MiB each way"; exit 1; }
for bad in -1 nan 1.5x ""; do
  if "$prog" --to "127.0.0.1:${p[0]}" --copy "$bad" >"$out/bad" 2>&1 || ! grep -q "copy wants bytes per byte" "$out/bad"; then
    cat "$out/bad"; echo "FAIL: --copy '$bad' was not refused clearly"; exit 1
  fi
done
if "$prog" --to "127.0.0.1:${p[0]}" --footprint 0 >"$out/bad" 2>&1 || ! grep -q "footprint wants a size" "$out/bad"; then
  cat "$out/bad"; echo "FAIL: --footprint 0 was not refused clearly"; exit 1
fi
run3 chain
grep -q "sent 8388608 received 0 bytes" "$out/chain.0" && grep -q "sent 0 received 8388608 bytes" "$out/chain.2" ||
  { cat "$out"/chain.*; echo "FAIL: chain: the head must only send and the tail only receive"; exit 1; }
start=$(date +%s)
if timeout 30 "$prog" --to "127.0.0.1:${p[0]}" --bytes 1M --timeout 2 >"$out/dead" 2>&1; then
  echo "FAIL: connecting to a port nobody listens on succeeded"; exit 1
fi
grep -q "tcp_streams: connect to 127.0.0.1:${p[0]}" "$out/dead" && (( $(date +%s) - start < 10 )) ||
  { cat "$out/dead"; echo "FAIL: no clear, timely error for a peer that never listens"; exit 1; }
echo "PASS: ring and chain of 3 on loopback; a missing peer fails in $(( $(date +%s) - start )) s naming the step"
