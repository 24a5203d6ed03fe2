#!/usr/bin/env bash
# Runs all_reduce_perf on 4 ranks under one launcher and checks that it validated its results:
# the proof that the bootstrap reads that launcher's environment (src/bootstrap/launch_env.cc).
#
#   run_under.sh LAUNCHER BINDIR      LAUNCHER: collrun | openmpi | mpich | torchrun | env
#                                               | torchrun_port_taken
# torchrun_port_taken: torchrun with the port coll's store would take (MASTER_PORT + 1) held by a
# listener that never speaks, as an outgoing connection or another service can hold it: rank 0
# must serve on a later port and the others find it (bootstrap/store_port_range.h).
#
# Exit 0: the run exited 0 and printed "# Out of bounds values : 0 OK". Exit 77 (CTest's
# SKIP_RETURN_CODE): the launcher is not installed. Anything else: failure, with the output.
# Every run is bounded by `timeout` (COLL_TIMEOUT bounds the ranks' own waits).
set -u
launcher=${1:?launcher}
bindir=${2:?bindir}
nranks=4
limit=${COLL_TEST_LAUNCHER_TIMEOUT:-120}
perf=("$bindir/all_reduce_perf" -b 8 -e 1M -f 32 -c 1 -n 2 -w 1)
export COLL_TIMEOUT=${COLL_TIMEOUT:-30}
# Each rank logs which launcher the bootstrap recognised ("launcher torchrun: rank 1 of 4 ...").
export COLL_DEBUG=INFO COLL_DEBUG_SUBSYS=INIT

out=$(mktemp -d "${TMPDIR:-/tmp}/coll-launcher-$launcher.XXXXXX")
trap 'rm -rf "$out"' EXIT

skip() { echo "SKIP: $*"; exit 77; }

# A TCP port nobody listens on now, whose successor is free too (torchrun puts its own store on
# MASTER_PORT and coll's next to it).
free_port() {
  /usr/bin/python3 - <<'EOF'
import socket
for _ in range(100):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1))
    except OSError:
        a.close(); continue
    a.close(); b.close(); print(p); break
EOF
}

case "$launcher" in
  collrun)
    timeout -k 5 "$limit" "$bindir/collrun" -n $nranks "${perf[@]}" >"$out/log" 2>&1
    rc=$?
    ;;
  openmpi)
    command -v mpirun.openmpi >/dev/null || skip "mpirun.openmpi is not installed"
    # The store file of coll's Open MPI path lives in /tmp; OMPI's own shared memory too.
    timeout -k 5 "$limit" mpirun.openmpi --allow-run-as-root --oversubscribe -n $nranks \
      -x COLL_TIMEOUT -x COLL_DEBUG -x COLL_DEBUG_SUBSYS "${perf[@]}" >"$out/log" 2>&1
    rc=$?
    ;;
  mpich)
    command -v mpirun.mpich >/dev/null || skip "mpirun.mpich is not installed"
    # Three runs: Hydra kills the whole job when a rank's PMI connection closes before
    # cmd=finalize, which only bites when that rank exits before the others; one run can be
    # lucky.
    for attempt in 1 2 3; do
      timeout -k 5 "$limit" mpirun.mpich -n $nranks -genvlist COLL_TIMEOUT,COLL_DEBUG,COLL_DEBUG_SUBSYS \
        "${perf[@]}" >"$out/log" 2>&1
      rc=$?
      [ "$rc" = 0 ] || { echo "(run $attempt of 3 failed)"; break; }
    done
    ;;
  torchrun|torchrun_port_taken)
    [ -x /usr/bin/torchrun ] || skip "/usr/bin/torchrun is not installed (Debian python3-torch)"
    port=$(free_port)
    [ -n "$port" ] || { echo "no free port pair"; exit 1; }
    if [ "$launcher" = torchrun_port_taken ]; then
      /usr/bin/python3 -c "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', $((port + 1))));
s.listen(64); print('held', flush=True); time.sleep($limit)" >"$out/holder" 2>&1 &
      holder=$!
      trap 'kill $holder 2>/dev/null; rm -rf "$out"' EXIT
      for _ in $(seq 50); do grep -q held "$out/holder" && break; sleep 0.1; done
      grep -q held "$out/holder" || { echo "could not hold port $((port + 1)): $(cat "$out/holder")"; exit 1; }
    fi
    # --redirects/--tee: each worker's stdout goes to a file and is echoed with a rank prefix.
    timeout -k 5 "$limit" /usr/bin/torchrun --no_python --nproc_per_node $nranks --master_port "$port" \
      --redirects 1 --tee 1 --log_dir "$out/torchrun-logs" "${perf[@]}" >"$out/log" 2>&1
    rc=$?
    ;;
  env)
    port=$(free_port)
    [ -n "$port" ] || { echo "no free port"; exit 1; }
    pids=()
    for ((r = 0; r < nranks; r++)); do
      RANK=$r WORLD_SIZE=$nranks LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        timeout -k 5 "$limit" "${perf[@]}" >"$out/rank$r.log" 2>&1 &
      pids+=($!)
    done
    rc=0
    for ((r = 0; r < nranks; r++)); do
      wait "${pids[$r]}" || { code=$?; echo "rank $r exited with $code"; rc=$code; }
    done
    for ((r = 0; r < nranks; r++)); do sed "s/^/[rank $r] /" "$out/rank$r.log"; done >"$out/log"
    ;;
  *)
    echo "unknown launcher '$launcher'"; exit 2 ;;
esac

cat "$out/log"
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  echo "FAIL: $launcher run did not finish within ${limit} s"
  exit 1
fi
if [ "$rc" != 0 ]; then
  echo "FAIL: $launcher run exited with $rc"
  exit 1
fi
if ! grep -q "# Out of bounds values : 0 OK" "$out/log"; then
  echo "FAIL: $launcher run did not report '# Out of bounds values : 0 OK'"
  exit 1
fi
# The bootstrap took the path meant for this launcher on every rank.
expected=$launcher
if [ "$launcher" = torchrun_port_taken ]; then
  expected=torchrun
  if ! grep -q "port $((port + 1)) was taken: serving the rendezvous store on" "$out/log"; then
    echo "FAIL: rank 0 did not say that it served the store on another port than the taken $((port + 1))"
    exit 1
  fi
fi
# Counted, not lines: a launcher may forward two ranks' lines onto one.
recognised=$(grep -o "launcher $expected: rank" "$out/log" | wc -l)
if [ "$recognised" != "$nranks" ]; then
  echo "FAIL: $recognised of $nranks ranks logged 'launcher $expected: rank ...'"
  exit 1
fi
echo "PASS: all_reduce_perf on $nranks ranks under $launcher"

