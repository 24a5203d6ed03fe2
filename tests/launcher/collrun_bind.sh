#!/bin/bash
# collrun --bind-to: "core" pins rank r to the r-th CPU collrun may use (one CPU each, all
# different), "none" (the default) leaves every rank collrun's own CPU list. Skips (77) on one
# CPU.
set -euo pipefail
collrun=$1
allowed=$(grep Cpus_allowed_list /proc/self/status | cut -f2)
ncpu=$(nproc)
[[ $ncpu -ge 2 ]] || { echo "one CPU: nothing to pin apart"; exit 77; }
show='echo "$COLL_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
pinned=$("$collrun" -n 2 --no-prefix --bind-to core -- sh -c "$show" | sort)
echo "$pinned"
lists=$(cut -d' ' -f2 <<<"$pinned")
[[ $(sort -u <<<"$lists" | wc -l) == 2 ]] || { echo "FAIL: ranks share a CPU list"; exit 1; }
grep -qE '^[0-9]+$' <<<"$(head -1 <<<"$lists")" || { echo "FAIL: rank 0 not pinned to one CPU"; exit 1; }
free=$("$collrun" -n 2 --no-prefix --bind-to none -- sh -c "$show" | cut -d' ' -f2 | sort -u)
[[ $free == "$allowed" ]] || { echo "FAIL: --bind-to none gave '$free', collrun has '$allowed'"; exit 1; }
default=$("$collrun" -n 2 --no-prefix -- sh -c "$show" | cut -d' ' -f2 | sort -u)
[[ $default == "$allowed" ]] || { echo "FAIL: no --bind-to pinned the ranks ('$default')"; exit 1; }
if "$collrun" -n 2 --bind-to socket -- true 2>/dev/null; then echo "FAIL: --bind-to socket accepted"; exit 1; fi
echo "OK"
