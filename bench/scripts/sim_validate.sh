#!/bin/bash
# coll-sim against the real thing (issue 27): on a simulated cluster (netcluster), every
# all-reduce and broadcast algorithm forced in turn over a size sweep, then coll-sim on the
# topology that same job probed and dumped (COLL_TOPO_DUMP_FILE), with netcluster's token
# bucket (tbf, 128 KB burst); bench/scripts/sim_compare.py prints both side by side and counts
# the points within 15% and the sizes where both name the same fastest algorithm.
# usage: bench/scripts/sim_validate.sh [--build DIR] [--hosts 4] [--per-host 1] [--rate 1gbit]
#            [--out DIR] [--small "8 ... 1M"] [--large "4M 16M 64M 256M"] [--rounds 3] [--iters 40]
#            [--launches 1] [--sim-only]
# --sim-only: no measurement; simulate again against the CSV and topology already in --out.
# Each size is one job per collective that times every algorithm side by side (the perf
# programs' -Q): --rounds interleaved rounds for the small sizes, the median of each reported;
# one round for the large ones, which repeat within a few percent (docs/SIMULATOR.md).
# --launches K: each small size's jobs K times, the median over the launches recorded (below
# 64 KiB a job's time depends on where the kernel put its threads, more than on its rounds),
# and as topology the probe of the launch whose loaded step is the median of all.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build hosts=4 per_host=1 rate=1gbit out="" sim_only=0 rounds=3 iters=40 launches=1
small="8 32 128 512 2K 8K 32K 128K 512K" large="2M 8M 32M 128M 256M"
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --per-host) per_host=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --small) small=$2; shift 2 ;;
    --large) large=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --sim-only) sim_only=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
NC=${NETCLUSTER:-$here/../shared/tools/netcluster}
prefix=simv subnet=10.214.21 port=30100 world=$((hosts * per_host))
work=$(mktemp -d /tmp/coll-simv.XXXXXX)
out=${out:-$work/result}
mkdir -p "$out"
cleanup() { (( sim_only )) || "$NC" down --prefix $prefix >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
tag="${hosts}x${per_host}_$rate"

# Large messages take seconds at 1 Gbit/s: fewer iterations and one round there.
# Below 32 KiB an op takes tens of µs and a few scheduler hiccups move a mean of 40: --iters.
ops_for() { local b; b=$(numfmt --from=iec "$1"); if (( b < 32768 )); then echo "$iters"; elif (( b < 1048576 )); then echo 40; else echo 3; fi; }
iters_for() { local n; n=$(ops_for "$1"); if (( n == 3 )); then echo "-n 3 -j 1"; else echo "-n $n -j $rounds"; fi; }

dumps=0
run() { # program collective "algos" size -> a line per algorithm (out of place) in launches.csv
  local prog=$1 coll=$2 algos=$3 size=$4 pids=() k rc=0 dump=$work/topology.$dumps.json
  port=$((port + 1)) dumps=$((dumps + 1))
  for k in $(seq 0 $((world - 1))); do
    # shellcheck disable=SC2046
    timeout 900 "$NC" exec $prefix$((k / per_host)) -- env RANK=$k WORLD_SIZE=$world MASTER_ADDR=$subnet.1 \
      MASTER_PORT=$port COLL_JOB_SECRET=simv-$port ${dump:+COLL_TOPO_DUMP_FILE=$dump} \
      "$build/bin/$prog" -b "$size" -e "$size" $(iters_for "$size") -c 0 -Q "$algos" >"$work/out.$k" 2>&1 &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || rc=$?; done
  [[ $rc == 0 ]] || { echo "run failed ($coll $size)" >&2; cat "$work"/out.* >&2; return 1; }
  awk -v c="$coll" '$1 ~ /^[0-9]+$/ {print c "," $NF "," $1 "," $6}' "$work/out.0" >>"$work/launches.csv"
}

launches_for() { if (( $(numfmt --from=iec "$1") < 1048576 )); then echo "$launches"; else echo 1; fi; }

allreduce_algos="ring direct tree rhd rd"
(( per_host > 1 )) && allreduce_algos+=" hierarchical"
if (( ! sim_only )); then
  "$NC" up "$hosts" --rate "$rate" --prefix $prefix --subnet $subnet >/dev/null
  echo "collective,algorithm,bytes,measured_us" >"$out/measured_$tag.csv"
  echo "perf programs' -Q, $rounds interleaved rounds below 1 MiB ($iters ops below 32 KiB, 40 from there; the median of $launches launches), one round of 3 ops above" >"$out/method_$tag.txt"
  for size in $small $large; do
    for _ in $(seq "$(launches_for "$size")"); do
      run all_reduce_perf allreduce "$allreduce_algos" "$size"
      run broadcast_perf broadcast "chain direct binomial" "$size"
    done
    echo "$tag: $size done" >&2
  done
  python3 - "$work" "$out/measured_$tag.csv" "$out/topology_$tag.json" <<'PY'
import csv, glob, json, shutil, statistics, sys
work, measured, topology = sys.argv[1:]
times = {}
for c, algo, b, us in csv.reader(open(f"{work}/launches.csv")):
    times.setdefault((c, algo, b), []).append(float(us))
with open(measured, "a") as f:
    for (c, algo, b), v in times.items():
        f.write(f"{c},{algo},{b},{statistics.median(v):.2f}\n")
probes = sorted(glob.glob(f"{work}/topology.*.json"), key=lambda p: json.load(open(p))["links"].get("loaded_step_us", 0))
shutil.copy(probes[len(probes) // 2], topology)
PY
fi

# The link at the rate netcluster shapes it to (the probe's β runs a few percent high).
# As many ops as the measurement times, from idle links: all_reduce_perf times its ops after a
# barrier, so its warm-up runs leave no backlog behind (and the token bucket refills).
# What a sender may leave queued: its peer's two socket buffers and the 20 ms of traffic
# netcluster's tbf queues ("latency 20ms"). Linux grants a socket twice what coll asks
# (COLL_SOCKET_BUFFER, 4 MiB) up to twice net.core.wmem_max, which the measurement records
# (sets measured before it did: 212992, Linux's default, 832 KiB for the two sockets).
if (( ! sim_only )); then cat /proc/sys/net/core/wmem_max >"$out/wmem_max_$tag.txt"; fi
wmem_max=$(cat "$out/wmem_max_$tag.txt" 2>/dev/null || echo 212992)
queued=$(python3 -c "import sys; r=sys.argv[1]; u={'kbit':1e3,'mbit':1e6,'gbit':1e9}[r[-4:]]; sock=2*min(4<<20, int(sys.argv[2])); print(int(2 * sock + float(r[:-4]) * u / 8 * 0.020))" "$rate" "$wmem_max")
sim="$build/bin/coll-sim --topology $out/topology_$tag.json --link $rate --burst 128K --send-buffer $queued --algo all ${SIM_FLAGS:-}"
sim_iters() { echo "-n $(ops_for "$1") -w 0"; }
rm -f "$out/sim_$tag.csv"
for s in $small $large; do
  # shellcheck disable=SC2046
  $sim $(sim_iters "$s") -c allreduce -b "$s" -e "$s" --csv "$work/a.csv" >/dev/null
  # shellcheck disable=SC2046
  $sim $(sim_iters "$s") -c broadcast -b "$s" -e "$s" --csv "$work/b.csv" >/dev/null
  [[ -f $out/sim_$tag.csv ]] || head -1 "$work/a.csv" >"$out/sim_$tag.csv"
  tail -n +2 -q "$work/a.csv" "$work/b.csv" >>"$out/sim_$tag.csv"
done
python3 "$here/bench/scripts/sim_compare.py" --measured "$out/measured_$tag.csv" --sim "$out/sim_$tag.csv" \
  --title "netcluster $hosts hosts x $per_host ranks at $rate"
