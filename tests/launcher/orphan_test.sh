#!/bin/bash
# No orphans: SIGKILL collrun in the middle of a job; every rank, direct (PR_SET_PDEATHSIG) or
# started through a wrapper shell (the COLL_LAUNCHER_FD lifeline), must be gone within 2 s,
# and the job must leave nothing behind in /dev/shm.
# usage: orphan_test.sh COLLRUN ALL_REDUCE_PERF
set -euo pipefail
collrun=$1 perf=$2
work=$(mktemp -d /tmp/coll-orphan.XXXXXX)
pids_to_reap=()
cleanup() { for p in "${pids_to_reap[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
# A job that runs far longer than the test: large all-reduces, many iterations.
job=("$perf" -b 8M -e 8M -n 100000 -w 1 -c 0)

# How many of the PIDs still run. A killed process stays a zombie until its new parent (init,
# or a subreaper) reaps it, which may take a while: a zombie counts as gone.
alive() {
  local n=0 p state
  for p in "$@"; do
    state=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) || continue
    [[ $state != Z && $state != X ]] && n=$((n + 1))
  done
  echo $n
}

# children PID...: the direct children of each PID.
children() { local p; for p in "$@"; do pgrep -P "$p" || true; done; }

# run_case NAME RANKS CMD...: starts collrun, waits for the ranks' programs, kills collrun.
run_case() {
  local name=$1 n=$2; shift 2
  ls /dev/shm >"$work/shm.before"
  "$collrun" -n "$n" -- "$@" >"$work/$name.out" 2>&1 &
  disown $!  # its death by SIGKILL is the point: no job-control notice
  local crun=$! ranks=() progs=() t
  pids_to_reap+=("$crun")
  for t in $(seq 100); do  # up to 10 s for the ranks to start and enter their loop
    mapfile -t ranks < <(children "$crun")
    mapfile -t progs < <(pgrep -f -- "-b 8M -e 8M -n 100000" || true)
    [[ ${#ranks[@]} -eq $n && ${#progs[@]} -ge $n ]] && grep -q 'out-of-place' "$work/$name.out" && break
    sleep 0.1
  done
  [[ ${#ranks[@]} -eq $n ]] || { echo "$name: $n ranks did not start"; cat "$work/$name.out"; return 1; }
  local everyone
  mapfile -t everyone < <(printf '%s\n' "${ranks[@]}" "${progs[@]}" | grep -vx "$crun" | sort -u)
  pids_to_reap+=("${everyone[@]}")
  kill -9 "$crun"
  local start left
  start=$(date +%s%N)
  while :; do  # until every process is gone, or 2 s have passed
    left=$(alive "${everyone[@]}")
    [[ $left == 0 || $(( $(date +%s%N) - start )) -gt 2000000000 ]] && break
    sleep 0.01
  done
  wait "$crun" 2>/dev/null || true
  if [[ $left != 0 ]]; then
    echo "$name: $left of ${#everyone[@]} processes outlived collrun by 2 s:"
    ps -o pid,ppid,stat,cmd -p "$(IFS=,; echo "${everyone[*]}")" || true
    return 1
  fi
  echo "$name: all ${#everyone[@]} processes of the ${n} ranks gone $(( ($(date +%s%N) - start) / 1000000 )) ms after SIGKILL to collrun (limit 2 s)"
  sleep 0.5
  ls /dev/shm >"$work/shm.after"
  if comm -13 "$work/shm.before" "$work/shm.after" | grep -q .; then
    sleep 3  # another test's segment lives only through its start-up; ours would stay
    ls /dev/shm >"$work/shm.later"
    local stale
    stale=$(comm -12 <(comm -13 "$work/shm.before" "$work/shm.after") "$work/shm.later")
    [[ -z $stale ]] || { echo "$name: left in /dev/shm: $stale"; return 1; }
  fi
}

run_case direct 3 "${job[@]}"
# The ranks' programs are grandchildren of collrun: bash does not exec them.
run_case wrapped 2 bash -c "\"\$0\" \"\$@\"; echo done" "${job[@]}"
echo "orphan test: ok"
