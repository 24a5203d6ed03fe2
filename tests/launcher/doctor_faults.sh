#!/usr/bin/env bash
# coll-doctor against injected faults on simulated hosts: each case starts coll-doctor on every
# host with RANK/WORLD_SIZE/MASTER_ADDR (as a user would by hand), with one fault in place, and
# checks the exit status and that the report names the fault and its fix:
#   healthy      4 hosts x 1: exit 0, every probe between hosts succeeds
#   iface_down   eth0 down on host 3: rank 3 says it cannot reach the store and shows eth0 DOWN;
#                rank 0 says rank 3 never reported
#   port_blocked nftables drops new TCP connections into host 1: rank 0 names the pairs into
#                host 1 as timed out and a firewall there (skipped without nft)
#   shm_small    2 hosts x 2, host 1's ranks with a private 1 MiB /dev/shm (a mount namespace):
#                rank 0 names /dev/shm on host 1, its free space and what coll needs
#   mtu_hole     hosts 1 and 2 at MTU 9000 behind 1500-byte switch ports: they connect, but
#                full-size frames are dropped, so the transfer between them stalls
#   mtu_differs  host 1 alone at MTU 9000 (TCP adapts): exit 0 with a warning naming the MTUs
#
#   doctor_faults.sh BINDIR [CASE...]        (DOCTOR_SHOW=1 prints the outputs checked)
# Root only (network namespaces): exit 77 otherwise. Its own netcluster (prefix ndc, subnet
# 10.214.28), always torn down; every run bounded by `timeout`.
set -u
bindir=${1:?bindir}
shift
here=$(cd "$(dirname "$0")" && pwd)
nc=${NETCLUSTER:-$here/../../../shared/tools/netcluster}
[[ -x $nc ]] || nc=/work/shared/tools/netcluster
prefix=ndc subnet=10.214.28 port=29620
cases=("$@")
[[ ${#cases[@]} -gt 0 ]] || cases=(healthy iface_down port_blocked shm_small mtu_hole mtu_differs)
[[ $EUID -eq 0 ]] || { echo "SKIP: coll-doctor's fault cases need root (network namespaces)"; exit 77; }
[[ -x $nc ]] || { echo "SKIP: no netcluster at $nc"; exit 77; }
out=$(mktemp -d "${TMPDIR:-/tmp}/coll-doctor.XXXXXX")
cleanup() { timeout 60 "$nc" down --prefix $prefix >/dev/null 2>&1; rm -rf "$out"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
timeout 60 "$nc" up 4 --prefix $prefix --subnet $subnet >/dev/null || { echo "FAIL: netcluster up"; exit 1; }
on() { local h=$1; shift; timeout 20 "$nc" exec $prefix$h -- "$@"; }
doctor=("$bindir/coll-doctor" --timeout 6 --connect-timeout 2 --transfer-timeout 3)

# launch CASE HOSTS PER_HOST [SHM_HOST]: the doctor on every rank; rank r's output in $out/CASE.r;
# prints the ranks' exit statuses. SHM_HOST's ranks get a private 1 MiB /dev/shm.
launch() {
  local name=$1 hosts=$2 per=$3 shm_host=${4:-} n=$(($2 * $3)) r pids=() rcs=()
  port=$((port + 1))
  for ((r = 0; r < n; r++)); do
    local h=$((r / per)) wrap=()
    [[ $h == "$shm_host" ]] && wrap=(unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm && exec "$@"' doctor)
    timeout 60 "$nc" exec $prefix$h -- env RANK=$r WORLD_SIZE=$n MASTER_ADDR=$subnet.1 MASTER_PORT=$port \
      COLL_JOB_SECRET=doctor-$port "${wrap[@]}" "${doctor[@]}" >"$out/$name.$r" 2>&1 &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r"; rcs+=($?); done
  echo "${rcs[*]}"
}

status=0 summary=()
# expect CASE "STATUSES" FILE REGEX...: the statuses match and FILE has every REGEX.
expect() {
  local name=$1 want=$2 got=$3 file=$4 bad=""
  shift 4
  [[ $got =~ ^$want$ ]] || bad+=" exit statuses '$got', expected '$want';"
  for re in "$@"; do grep -Eq -- "$re" "$file" || bad+=" no '$re' in $(basename "$file");"; done
  [[ -n ${DOCTOR_SHOW:-} ]] && { echo "--- $name: $(basename "$file")"; cat "$file"; }
  if [[ -z $bad ]]; then summary+=("PASS $name"); return; fi
  status=1
  summary+=("FAIL $name:$bad")
  echo "--- $name: $(basename "$file")"; cat "$file"
}

for c in "${cases[@]}"; do
  case $c in
    healthy)
      got=$(launch $c 4 1)
      expect $c "0 0 0 0" "$got" "$out/$c.0" "connection probes between hosts: 12 of 12 succeeded" "verdict: OK" ;;
    iface_down)
      on 3 ip link set eth0 down
      got=$(launch $c 4 1)
      on 3 ip link set eth0 up
      expect $c "1 1 1 1" "$got" "$out/$c.3" "cannot reach the rendezvous store" "interface eth0 .*DOWN"
      expect $c "1 1 1 1" "$got" "$out/$c.0" "rank\(s\) 3 never reported" "verdict: the job would fail" ;;
    port_blocked)
      if ! command -v nft >/dev/null; then summary+=("SKIP $c (nft is not installed: apt-get install nftables)"); continue; fi
      on 1 nft add table inet doctor_test
      on 1 nft add chain inet doctor_test input '{ type filter hook input priority 0; policy accept; }'
      on 1 nft add rule inet doctor_test input meta l4proto tcp ct state new drop
      got=$(launch $c 4 1)
      on 1 nft delete table inet doctor_test
      expect $c "1 1 1 1" "$got" "$out/$c.0" "-> 1 \(${prefix}1 .*connect: timed out" "a firewall on ${prefix}1" \
        "verdict: the job would fail" ;;
    shm_small)
      got=$(launch $c 2 2 1)
      expect $c "1 1 1 1" "$got" "$out/$c.0" "${prefix}1: /dev/shm has 1.0 MiB free, and coll's shared memory needs [0-9.]+ MiB" \
        "shm-size" "verdict: the job would fail" ;;
    mtu_hole)
      # gso_max_segs 1: veth and the bridge let a GSO packet pass whatever its size (a real NIC
      # would cut it into MTU-sized frames first), so without it a transfer that happens to go
      # out in GSO packets crosses the hole. One frame per packet makes every full-size frame
      # meet the 1500-byte switch ports, as on real hardware.
      on 1 ip link set eth0 mtu 9000 gso_max_segs 1
      on 2 ip link set eth0 mtu 9000 gso_max_segs 1
      got=$(launch $c 4 1)
      on 1 ip link set eth0 mtu 1500 gso_max_segs 65535
      on 2 ip link set eth0 mtu 1500 gso_max_segs 65535
      expect $c "1 1 1 1" "$got" "$out/$c.0" "(1 \(${prefix}1\) -> 2|2 \(${prefix}2\) -> 1) .*transfer: connected, but" \
        "full-size packets are lost between ${prefix}1 \(MTU 9000\) and ${prefix}2 \(MTU 9000\)" "verdict: the job would fail" ;;
    mtu_differs)
      on 1 ip link set eth0 mtu 9000
      got=$(launch $c 4 1)
      on 1 ip link set eth0 mtu 1500
      expect $c "0 0 0 0" "$got" "$out/$c.0" "WARN: the MTU differs between hosts: 1500 on .*; 9000 on ${prefix}1 eth0" \
        "verdict: OK \(1 warning" ;;
    *) echo "unknown case $c"; exit 2 ;;
  esac
done
printf '%s\n' "${summary[@]}"
exit $status
