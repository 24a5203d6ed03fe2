#!/bin/bash
# Launch mistakes are named as such on every rank within COLL_TIMEOUT (the roll call,
# src/bootstrap/roll_call.h), with ranks started by hand as a plain environment starts them:
#   duplicate:  ranks 0, 1, 1 of 3   -> "rank 1 joined twice"
#   size:       sizes 3, 3, 4        -> "world size disagrees"
#   missing:    ranks 0, 1 of 3      -> "rank 2 never joined: 2 of 3 ranks joined"
#   range:      rank 3 of 3          -> "not a valid position"
#   port:       a second job of 3 on the port of a running one -> "joined twice" on ranks 1
#               and 2, "another job on this port" on rank 0; the running job goes on.
# No COLL_JOB_SECRET: the secret derived from MASTER_ADDR:MASTER_PORT is what most users have.
# usage: launch_mistakes.sh ALL_REDUCE_PERF
set -uo pipefail
perf=$1
work=$(mktemp -d /tmp/coll-launch.XXXXXX)
trap 'rm -rf "$work"' EXIT
export COLL_TIMEOUT=5
unset COLL_JOB_SECRET
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
failed=0

# run NAME "rank size" ... : starts one process per pair, waits, and checks each log for WORDS.
run() {
  local name=$1 words=$2; shift 2
  local pids=() k=0 pair
  local port=${PORT:-$(free_port)}
  local start=$SECONDS
  for pair in "$@"; do
    read -r r n <<<"$pair"
    RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      timeout -k 5 60 "$perf" -b 8 -e 8 -n 1 -w 0 >"$work/$name.$k" 2>&1 &
    pids+=($!)
    k=$((k + 1))
  done
  local i ok=1
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then ok=0; echo "$name: process $i succeeded"; fi
    if ! grep -E -q "$words" "$work/$name.$i"; then
      ok=0
      echo "$name: process $i did not say '$words':"
      sed 's/^/    /' "$work/$name.$i" | tail -5
    fi
  done
  echo "$name: all ${#pids[@]} processes failed within $((SECONDS - start)) s naming it: $(grep -E -h -o "$words.*" "$work/$name.0" | head -1 | cut -c1-160)"
  [[ $ok == 1 ]] || failed=1
}

run duplicate "rank 1 joined twice" "0 3" "1 3" "1 3"
run size "world size disagrees" "0 3" "1 3" "2 4"
run missing "rank 2 never joined: 2 of 3 ranks joined" "0 3" "1 3"
run range "not a valid position" "3 3"

# A job that runs for a while on one port, and a second one started on the same port.
port=$(free_port)
for r in 0 1 2; do
  RANK=$r WORLD_SIZE=3 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    timeout -k 5 60 "$perf" -b 4K -e 4K -n 2000000 -w 0 >"$work/first.$r" 2>&1 &
  first+=($!)
done
sleep 2
PORT=$port run port "joined twice|another job on this port" "0 3" "1 3" "2 3"
for pid in "${first[@]}"; do
  if ! kill -0 "$pid" 2>/dev/null; then echo "port: the running job ended early:"; tail -3 "$work/first.0"; failed=1; fi
  kill "$pid" 2>/dev/null
done
wait
[[ $failed == 0 ]] && echo "launch mistakes: ok"
exit $failed
