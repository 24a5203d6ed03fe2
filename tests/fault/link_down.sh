#!/usr/bin/env bash
# Link-down fault on a simulated cluster: 4 ranks on 4 netcluster hosts (prefix ntf, subnet
# 10.214.17, socket transport), all-reducing; host ntf2's eth0 goes down mid-run. The
# survivors must fail within 2 x COLL_TIMEOUT naming rank 2; every rank must destroy its
# communicator promptly with the descriptors and threads it had before, and /dev/shm must hold
# no new entry. Needs root and ../shared/tools/netcluster; exit 77 (skip) without them.
#
#   link_down.sh BINDIR            prints one line per rank: seconds after link-down, error
set -u
bindir=${1:?bindir}
root=$(cd "$(dirname "$0")/../.." && pwd)
nc=${NETCLUSTER:-$root/../shared/tools/netcluster}
prefix=ntf subnet=10.214.17 victim=2 timeout=${COLL_TIMEOUT:-5}
[[ $EUID -eq 0 && -x $nc ]] || { echo "SKIP: needs root and $nc"; exit 77; }
out=$(mktemp -d "${TMPDIR:-/tmp}/coll-link-down.XXXXXX")
trap '"$nc" down --prefix $prefix >/dev/null 2>&1; rm -rf "$out"' EXIT
"$nc" up 4 --prefix $prefix --subnet $subnet --rate none >/dev/null || { echo "netcluster up failed"; exit 1; }
shm_before=$(ls /dev/shm | wc -l)

secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
for r in 0 1 2 3; do
  "$nc" exec $prefix$r -- env RANK=$r WORLD_SIZE=4 MASTER_ADDR=$subnet.1 MASTER_PORT=29517 COLL_JOB_SECRET=$secret \
    COLL_TIMEOUT=$timeout timeout 90 "$bindir/link_down_rank" --seconds 60 >"$out/$r" 2>&1 &
  pids+=($!)
done
for _ in $(seq 300); do  # every rank ran 3 all-reduces (at most 30 s)
  [[ $(cat "$out"/? | grep -c running) -eq 4 ]] && break
  sleep 0.1
done
down_at=$(date +%s.%N)
ip netns exec $prefix$victim ip link set eth0 down
for p in "${pids[@]}"; do wait "$p"; done

status=0
for r in 0 1 2 3; do
  line=$(grep -m1 "failed at" "$out/$r")
  if [[ -z $line ]]; then echo "rank $r did not fail cleanly:"; cat "$out/$r"; status=1; continue; fi
  at=$(sed -E 's/.*failed at ([0-9.]+).*/\1/' <<<"$line")
  after=$(awk -v a="$at" -v d="$down_at" 'BEGIN { printf "%.2f", a - d }')
  echo "rank $r failed $after s after link-down: ${line#*: }"
  grep "destroyed" "$out/$r"
  if [[ $r -ne $victim ]]; then
    awk -v s="$after" -v t="$timeout" 'BEGIN { exit !(s > 0 && s < 2 * t) }' || { echo "  rank $r: not within 2 x $timeout s"; status=1; }
    # The culprit may be named as the peer that timed out or, by the ledger, as the rank that
    # did not answer (a survivor whose neighbour failed first reports that neighbour's close).
    grep -qE "(peer|rank) $victim\b" <<<"$line" || { echo "  rank $r: does not name rank $victim"; status=1; }
  fi
  grep -qE "fds ([0-9]+) -> \1, threads ([0-9]+) -> \2" "$out/$r" || { echo "  rank $r: leaked"; status=1; }
done
shm_after=$(ls /dev/shm | wc -l)
[[ $shm_after -le $shm_before ]] || { echo "/dev/shm: $shm_before entries before, $shm_after after"; status=1; }
exit $status
