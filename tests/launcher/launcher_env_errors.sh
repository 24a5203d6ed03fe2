#!/bin/bash
# An incomplete or inconsistent launcher environment fails init at once, before any connection,
# with an error naming the launcher, the variable and what was expected (launch_env.cc,
# pmix_exchange.cc). One process per case, started by hand with the launcher's variables:
#   pmix-gone:   Open MPI's variables and a PMIx server URI where nothing listens
#   pmix-mute:   a PMIx server URI where a listener accepts and never answers: COLL_TIMEOUT
#   pmix-rank:   PMIX_NAMESPACE with a PMIX_RANK that is not a number
#   slurm-nodes: SLURM_PROCID and SLURM_NTASKS without a node list
#   ompi-hosts:  Open MPI ranks on several hosts with no PMIx server and no MASTER_ADDR
# usage: launcher_env_errors.sh ALL_REDUCE_PERF PMIX(ON|OFF)
set -uo pipefail
perf=$1 have_pmix=$2
failed=0
closed_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# expect NAME WORDS VAR=VALUE...: runs perf in an environment of only VAR=VALUE (and PATH).
expect() {
  local name=$1 words=$2; shift 2
  local start=$SECONDS out rc
  out=$(env -i PATH="$PATH" COLL_TIMEOUT=3 "$@" timeout -k 5 30 "$perf" -b 8 -e 8 -n 1 -w 0 2>&1)
  rc=$?
  if [[ $rc == 0 ]] || ! grep -E -q "$words" <<<"$out"; then
    echo "$name: expected a failure saying '$words', got exit $rc:"; sed 's/^/    /' <<<"$out" | tail -5
    failed=1
    return
  fi
  echo "$name: failed within $((SECONDS - start)) s: $(grep -E -o "init from.*" <<<"$out" | head -1 | cut -c1-220)"
}

ompi=(OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2)
if [[ $have_pmix == ON ]]; then
  expect pmix-gone "openmpi: PMIx_Init failed .*PMIX_NAMESPACE=job7, PMIX_RANK=1, PMIX_SERVER_URI41=" "${ompi[@]}" \
    PMIX_NAMESPACE=job7 PMIX_RANK=1 "PMIX_SERVER_URI41=pmix-server.4242;tcp4://127.0.0.1:$closed_port"
  expect ompi-hosts "openmpi: ranks on several hosts .*PMIX_NAMESPACE or PMIX_RANK is not set.*MASTER_ADDR" "${ompi[@]}"
  # A server that hangs: PMIx_Init has no timeout of its own.
  work=$(mktemp -d /tmp/coll-env-errors.XXXXXX)
  timeout 20 python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); __import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
c = s.accept(); time.sleep(15)' "$work/port" &
  mute=$!
  for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
  expect pmix-mute "openmpi: the PMIx server did not answer PMIx_Init within 3 s \\(COLL_TIMEOUT\\)" "${ompi[@]}" \
    PMIX_NAMESPACE=job7 PMIX_RANK=1 "PMIX_SERVER_URI41=pmix-server.4242;tcp4://127.0.0.1:$(cat "$work/port")"
  kill "$mute" 2>/dev/null; wait "$mute" 2>/dev/null; rm -rf "$work"
else
  expect ompi-hosts "openmpi: ranks on several hosts .*built without PMIx.*MASTER_ADDR" "${ompi[@]}"
fi
expect pmix-rank "pmix: PMIX_RANK=first is not a rank number" PMIX_NAMESPACE=job7 PMIX_RANK=first
expect slurm-nodes "Slurm: no SLURM_STEP_NODELIST or SLURM_JOB_NODELIST" SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_JOB_ID=7
[[ $failed == 0 ]] && echo "launcher environment errors: ok"
exit $failed
