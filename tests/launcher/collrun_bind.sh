#!/bin/bash
# collrun --bind-to: "core" pins rank r to the r-th CPU collrun may use (one CPU each, all
# different; beyond the CPUs they wrap around), "none" leaves every rank collrun's own CPU
# list, and "auto" (the default) pins as core does where the CPUs are idle and says so on
# stderr, or says why it does not. Skips (77) on one CPU.
set -euo pipefail
collrun=$1
allowed=$(grep Cpus_allowed_list /proc/self/status | cut -f2)
ncpu=$(nproc)
[[ $ncpu -ge 2 ]] || { echo "one CPU: nothing to pin apart"; exit 77; }
TMPDIR_BIND=$(mktemp -d)
trap 'rm -rf "$TMPDIR_BIND"' EXIT
show='echo "$COLL_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
pinned=$("$collrun" -n 2 --no-prefix --bind-to core -- sh -c "$show" | sort)
echo "$pinned"
lists=$(cut -d' ' -f2 <<<"$pinned")
[[ $(sort -u <<<"$lists" | wc -l) == 2 ]] || { echo "FAIL: ranks share a CPU list"; exit 1; }
grep -qE '^[0-9]+$' <<<"$(head -1 <<<"$lists")" || { echo "FAIL: rank 0 not pinned to one CPU"; exit 1; }
free=$("$collrun" -n 2 --no-prefix --bind-to none -- sh -c "$show" | cut -d' ' -f2 | sort -u)
[[ $free == "$allowed" ]] || { echo "FAIL: --bind-to none gave '$free', collrun has '$allowed'"; exit 1; }
default=$("$collrun" -n 2 --no-prefix -- sh -c "$show" 2>"$TMPDIR_BIND/note" | sort)
note=$(cat "$TMPDIR_BIND/note")
echo "default: $note"
if grep -q "fit the" <<<"$note"; then
  [[ $default == "$pinned" ]] || { echo "FAIL: auto said it binds but gave '$default', core gave '$pinned'"; exit 1; }
else
  grep -q "not binding ranks to CPUs: other processes keep" <<<"$note" || { echo "FAIL: auto said '$note'"; exit 1; }
  [[ $(cut -d' ' -f2 <<<"$default" | sort -u) == "$allowed" ]] || { echo "FAIL: auto did not bind but pinned"; exit 1; }
fi
# More ranks than CPUs: auto wraps around (rank r on CPU r mod n), as core does, or says why not.
over=$("$collrun" -n $((ncpu + 1)) --no-prefix -- sh -c "$show" 2>"$TMPDIR_BIND/note" | sort)
note=$(cat "$TMPDIR_BIND/note")
echo "oversubscribed: $note"
over_core=$("$collrun" -n $((ncpu + 1)) --no-prefix --bind-to core -- sh -c "$show" | sort)
[[ $(grep -c '^0 ' <<<"$over_core") == 1 ]] || { echo "FAIL: --bind-to core gave '$over_core'"; exit 1; }
[[ $(grep "^$ncpu " <<<"$over_core" | cut -d' ' -f2) == $(grep '^0 ' <<<"$over_core" | cut -d' ' -f2) ]] ||
  { echo "FAIL: rank $ncpu does not share rank 0's CPU under --bind-to core: '$over_core'"; exit 1; }
if grep -q "ranks share the" <<<"$note"; then
  [[ $over == "$over_core" ]] || { echo "FAIL: auto said it binds $((ncpu + 1)) ranks but gave '$over'"; exit 1; }
else
  grep -q "not binding ranks to CPUs: other processes keep" <<<"$note" || { echo "FAIL: auto said '$note'"; exit 1; }
  [[ $(cut -d' ' -f2 <<<"$over" | sort -u) == "$allowed" ]] || { echo "FAIL: auto did not bind but pinned"; exit 1; }
fi
if "$collrun" -n 2 --bind-to socket -- true 2>/dev/null; then echo "FAIL: --bind-to socket accepted"; exit 1; fi
echo "OK"
