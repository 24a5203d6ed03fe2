#!/bin/bash
# Side-by-side on a simulated cluster (H hosts x R ranks, shaped links): coll's all-reduce
# (automatic choice, and the flat ring forced) and broadcast against torch.distributed gloo,
# Open MPI and iperf3, interleaved, several rounds, medians. Needs root (network namespaces)
# and a build with bench programs.
#
# usage: bench/scripts/netcluster_compare.sh [--build DIR] [--rate 1gbit] [--rounds 3] [--size 256M]
#                                            [--hosts 4] [--per-host 1]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build rate=1gbit rounds=3 size=256M hosts=4 per_host=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --per-host) per_host=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
NC=${NETCLUSTER:-$here/../shared/tools/netcluster}
prefix=ncc subnet=10.214.7 port=29600
work=$(mktemp -d /tmp/coll-ncc.XXXXXX)
cleanup() { "$NC" down --prefix $prefix >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
"$NC" up "$hosts" --rate "$rate" --prefix $prefix --subnet $subnet >/dev/null
world=$((hosts * per_host))
addr() { echo "$subnet.$(( $1 + 1 ))"; }

# Runs "$@" as world = hosts x per_host ranks (rank k on host k / per_host) with torch-style
# env; prints rank 0's output.
run4() {
  local pids=() k rc=0
  port=$((port + 1))
  for k in $(seq 0 $((world - 1))); do
    timeout 600 "$NC" exec $prefix$((k / per_host)) -- env RANK=$k WORLD_SIZE=$world LOCAL_RANK=$((k % per_host)) \
      MASTER_ADDR=$(addr 0) MASTER_PORT=$port COLL_JOB_SECRET=ncc-$port "$@" >"$work/out.$k" 2>&1 &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || rc=$?; done
  [[ $rc == 0 ]] || { echo "run failed ($rc): $*" >&2; cat "$work"/out.* >&2; return 1; }
  cat "$work/out.0"
}

# Open MPI needs its daemons started inside the namespaces (netcluster rsh) and mpirun on h0.
ompi() {
  [[ -x $build/peers/mpi_perf_openmpi ]] || return 0
  local hostfile=$work/hosts agent=$work/rsh k
  for k in $(seq 0 $((hosts - 1))); do echo "$(addr $k) slots=$per_host"; done >"$hostfile"
  printf '#!/bin/bash\nh=$1; shift\nexec %s rsh %s$(( ${h##*.} - 1 )) "$@"\n' "$NC" $prefix >"$agent"
  chmod +x "$agent"
  timeout 600 "$NC" exec ${prefix}0 -- mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to none -n $world \
    --hostfile "$hostfile" --mca plm_rsh_agent "$agent" --mca btl tcp,self --mca btl_tcp_if_include eth0 \
    --mca oob_tcp_if_include eth0 "$build/peers/mpi_perf_openmpi" "$@" 2>&1
}

bytes() { numfmt --from=iec "$1"; }
row() { awk '$1 ~ /^[0-9]+$/' ; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

S=$(bytes "$size")
declare -A results
for r in $(seq "$rounds"); do
  "$NC" exec ${prefix}1 -- timeout 20 iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
  sleep 0.5
  iperf=$("$NC" exec ${prefix}0 -- iperf3 -c "$(addr 1)" -p 5201 -t 5 -J | /usr/bin/python3 -c \
    'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e9)')
  wait
  results[iperf]+="$iperf "
  # busbw from the out-of-place time (the table rounds busbw to 2 decimals)
  results[coll_ar]+="$(run4 "$build/bin/all_reduce_perf" -b "$S" -e "$S" -n 3 -w 1 -c 1 | row | awk -v n=$world '{printf "%.4f", $1/$6/1e3*2*(n-1)/n}') "
  results[ring_ar]+="$(COLL_ALGO=allreduce:ring run4 "$build/bin/all_reduce_perf" -b "$S" -e "$S" -n 3 -w 1 -c 1 | row | awk -v n=$world '{printf "%.4f", $1/$6/1e3*2*(n-1)/n}') "
  results[gloo_ar]+="$(run4 /usr/bin/python3 "$here/bench/peers/torch_dist_perf.py" -b "$S" -e "$S" -n 3 -w 1 | row | awk -v n=$world '{printf "%.4f", $1/$2/1e3*2*(n-1)/n}') "
  results[coll_bc]+="$(run4 "$build/bin/broadcast_perf" -b "$S" -e "$S" -n 3 -w 1 -c 1 | row | awk '{printf "%.4f", $1/$6/1e3}') "
  results[gloo_bc]+="$(run4 /usr/bin/python3 "$here/bench/peers/torch_dist_perf.py" --op broadcast -b "$S" -e "$S" -n 3 -w 1 | row | awk '{printf "%.4f", $1/$2/1e3}') "
  results[coll_lat]+="$(run4 "$build/bin/all_reduce_perf" -b 8 -e 8 -n 200 -w 20 -c 0 | row | awk '{print $6}') "
  results[gloo_lat]+="$(run4 /usr/bin/python3 "$here/bench/peers/torch_dist_perf.py" -b 8 -e 8 -n 200 -w 20 | row | awk '{print $2}') "
  results[ompi_lat]+="$(ompi allreduce 8 8 2 200 20 | row | awk '{print $2}') "
  echo "round $r done" >&2
done

med() { tr ' ' '\n' <<<"${results[$1]}" | grep . | median; }
link=$(/usr/bin/python3 -c "import re;r='$rate';m=re.match(r'([0-9.]+)(k|m|g)bit',r);print(float(m[1])*{'k':1e3,'m':1e6,'g':1e9}[m[2]]/8e9)")
echo "# netcluster $hosts hosts x $per_host rank(s) at $rate (link rate $link GB/s), $rounds rounds, medians"
printf '# iperf3 one stream h0 -> h1: %.4f GB/s\n' "$(med iperf)"
printf '%-34s %10s %10s %8s\n' "measure" "coll" "peer" "ratio"
ratio() { /usr/bin/python3 -c "print(f'{$1/$2:.3f}')"; }
ca=$(med coll_ar) ra=$(med ring_ar) ga=$(med gloo_ar) cb=$(med coll_bc) gb=$(med gloo_bc)
printf '%-34s %10s %10s %8s\n' "allreduce busbw $size (GB/s), gloo" "$ca" "$ga" "$(ratio "$ca" "$ga")"
printf '%-34s %10s %10s %8s\n' "allreduce busbw, coll's flat ring" "$ca" "$ra" "$(ratio "$ca" "$ra")"
printf '%-34s %10s %10s %8s\n' "allreduce busbw / link rate" "$(ratio "$ca" "$link")" "$(ratio "$ga" "$link")" ""
printf '%-34s %10s %10s %8s\n' "broadcast busbw $size (GB/s), gloo" "$cb" "$gb" "$(ratio "$cb" "$gb")"
printf '%-34s %10s %10s %8s\n' "broadcast busbw / link rate" "$(ratio "$cb" "$link")" "$(ratio "$gb" "$link")" ""
cl=$(med coll_lat) gl=$(med gloo_lat) ol=$(med ompi_lat)
printf '%-34s %10s %10s %8s\n' "allreduce 8 B latency (us), gloo" "$cl" "$gl" "$(ratio "$cl" "$gl")"
[[ -n $ol ]] && printf '%-34s %10s %10s %8s\n' "allreduce 8 B latency (us), Open MPI" "$cl" "$ol" "$(ratio "$cl" "$ol")"
