#!/bin/bash
# A malformed COLL_* value fails init on every rank, naming the variable, its value and what
# is allowed (it used to be warned about and replaced by the default).
# usage: bad_environment.sh COLLRUN ALL_REDUCE_PERF
set -uo pipefail
collrun=$1 perf=$2
out=$(COLL_SOCKET_NSTREAMS=0 COLL_CHECK=2 timeout 60 "$collrun" -n 2 "$perf" -b 8 -e 8 -n 1 -w 0 2>&1)
rc=$?
echo "$out"
[[ $rc != 0 ]] || { echo "the job ran with bad COLL_* values"; exit 1; }
for rank in 0 1; do
  grep "^\[$rank\]" <<<"$out" | grep -q 'bad environment: COLL_SOCKET_NSTREAMS=0: expected an integer from 1 to 64; COLL_CHECK=2: expected an integer from 0 to 1' ||
    { echo "rank $rank did not name both bad variables"; exit 1; }
done
echo "bad environment: ok"
