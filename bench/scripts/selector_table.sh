#!/bin/bash
# The selector against every forced all-reduce algorithm on a simulated cluster (issue 4's
# figure): time per size from 8 B to 256 MiB (factor 4) of the automatic choice and of
# COLL_ALGO=allreduce:<name> for each name, medians of --rounds interleaved rounds (each round
# runs every column once), and how often the automatic choice is within 10% of the fastest.
# Small sizes (<= 64 KiB) take -n 100 (--small-iters; 10 warm-ups), large ones -n 2 (one warm-up).
# --in-job: every column in one job instead (all_reduce_perf -Q, Communicator::setAlgorithms),
# --rounds interleaved rounds inside it, so the columns share one process placement: on a busy
# 2-core machine two jobs running the same algorithm differ by up to 20 %. No tuned column.
# Root: it brings its own netcluster (prefix ntp, subnet 10.214.13) up and always down.
#
# usage: bench/scripts/selector_table.sh [--build DIR] [--hosts 2] [--per-host 2] [--rate 1gbit]
#                                        [--algos "ring direct hierarchical"] [--max 256M] [--rounds 3]
#                                        [--in-job] [--small-iters 100]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build hosts=2 per_host=2 rate=1gbit algos="ring direct hierarchical" max=256M rounds=3 in_job=0 small_iters=100
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --per-host) per_host=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --algos) algos=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --in-job) in_job=1; shift ;;
    --small-iters) small_iters=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
NC=${NETCLUSTER:-$here/../shared/tools/netcluster}
prefix=ntp subnet=10.214.13 port=30100 world=$((hosts * per_host))
work=$(mktemp -d /tmp/coll-ntp.XXXXXX)
cleanup() { "$NC" down --prefix $prefix >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
"$NC" up "$hosts" --rate "$rate" --prefix $prefix --subnet $subnet >/dev/null

# One all_reduce_perf run over the cluster (blocking ops, -z 2); prints "size time_us" rows.
run() { # algo ("auto" or a name), then all_reduce_perf's size flags
  local algo=$1 pids=() k rc=0 algo_env=()
  shift
  port=$((port + 1))
  case $algo in
    auto) ;;
    tuned) algo_env=(COLL_TUNE=1 COLL_TUNE_FILE=$work/tune.json) ;;  # measures once, then reuses
    *) algo_env=(COLL_ALGO=allreduce:$algo) ;;
  esac
  for k in $(seq 0 $((world - 1))); do
    timeout 600 "$NC" exec $prefix$((k / per_host)) -- env RANK=$k WORLD_SIZE=$world MASTER_ADDR=$subnet.1 \
      MASTER_PORT=$port COLL_JOB_SECRET=ntp-$port COLL_DEBUG=INFO COLL_DEBUG_SUBSYS=TUNE,TOPO "${algo_env[@]}" \
      "$build/bin/all_reduce_perf" "$@" -z 2 >"$work/out.$k" 2>"$work/err.$k" &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || rc=$?; done
  [[ $rc == 0 ]] || { echo "run failed ($algo)" >&2; tail -n 5 "$work"/out.* "$work"/err.* >&2; return 1; }
  [[ $algo == auto* || $algo == tuned ]] && [[ ! -s $work/choices.$algo.$2 ]] &&
    grep -E "TOPO|TUNE" "$work/err.0" | sed 's/^/# /' >"$work/choices.$algo.$2"
  awk '$1 ~ /^[0-9]+$/ {print $1, $6, $NF}' "$work/out.0"  # size, out-of-place time, -Q's algorithm
}

# Each round starts one column further on, so no column always runs first (right after the
# previous round's largest run), and every run waits a second after the one before: ranks
# that held gigabytes take the kernel that long to tear down, and a small-message run started
# meanwhile measured 20-25 % slow (the first columns, auto and tuned, in every round).
declare -A all t
columns=(auto tuned $algos)
max_bytes=$(numfmt --from=iec "$max")
small_max=$((max_bytes < 65536 ? max_bytes : 65536))
large=1; [[ $max_bytes -lt 262144 ]] && large=0  # --max below 256K: small sizes only
if [[ $in_job == 1 ]]; then
  ranges=("-b 8 -e $small_max -f 4 -n $small_iters -w 10 -c 1")
  [[ $large == 1 ]] && ranges+=("-b 256K -e $max -f 4 -n 2 -w 1 -c 0")
  for range in "${ranges[@]}"; do
    sleep 1
    # shellcheck disable=SC2086  # the range is several flags
    while read -r size us a; do all[$a,$size]+="$us "; done < <(run auto $range -Q "auto $algos" -j "$rounds")
  done
  rounds_done=0
else
  rounds_done=$rounds
fi
for r in $(seq "$rounds_done"); do
  for k in $(seq 0 $((${#columns[@]} - 1))); do
    a=${columns[$(( (k + r - 1) % ${#columns[@]} ))]}
    sleep 1
    while read -r size us _; do all[$a,$size]+="$us "; done < <(run "$a" -b 8 -e "$small_max" -f 4 -n "$small_iters" -w 10 -c 1)
    sleep 1
    [[ $large == 1 ]] || continue
    while read -r size us _; do all[$a,$size]+="$us "; done < <(run "$a" -b 256K -e "$max" -f 4 -n 2 -w 1 -c 0)
  done
  echo "round $r done" >&2
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
for k in "${!all[@]}"; do t[$k]=$(median <<<"${all[$k]}"); done

where="in separate jobs"; [[ $in_job == 1 ]] && where="in one job per size range"
echo "# netcluster $hosts hosts x $per_host ranks at $rate: all-reduce time (us, median of $rounds rounds $where; -n $small_iters up to 64 KiB, -n 2 above)"
cat "$work"/choices.* 2>/dev/null || true
tuned_col() { [[ $in_job == 1 ]] || printf " $1" "$2"; }  # one job has no tuned column
printf '%10s %10s' size auto; tuned_col %10s tuned; for a in $algos; do printf ' %12s' "$a"; done
printf ' %12s %10s' best auto/best; tuned_col %11s tuned/best; echo
good=0 tuned_good=0 total=0
within() { awk -v r="$1" 'BEGIN{exit !(r <= 1.10)}'; }
for size in $(printf '%s\n' "${!t[@]}" | sed -n 's/^auto,//p' | sort -n); do
  best= bestname=
  for a in $algos; do
    v=${t[$a,$size]:-}
    [[ -z $v ]] && continue
    if [[ -z $best ]] || awk -v a="$v" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$v bestname=$a; fi
  done
  ratio=$(awk -v a="${t[auto,$size]}" -v b="$best" 'BEGIN{printf "%.2f", a / b}')
  tratio=-
  [[ -n ${t[tuned,$size]:-} ]] && tratio=$(awk -v a="${t[tuned,$size]}" -v b="$best" 'BEGIN{printf "%.2f", a / b}')
  total=$((total + 1))
  within "$ratio" && good=$((good + 1))
  [[ $tratio != - ]] && within "$tratio" && tuned_good=$((tuned_good + 1))
  printf '%10s %10s' "$size" "${t[auto,$size]}"; tuned_col %10s "${t[tuned,$size]:-}"
  for a in $algos; do printf ' %12s' "${t[$a,$size]:-}"; done
  printf ' %12s %10s' "$bestname" "$ratio"; tuned_col %11s "$tratio"; echo
done
echo "# automatic (cost model) within 10% of the fastest forced algorithm at $good of $total sizes"
[[ $in_job == 1 ]] ||
  echo "# automatic with COLL_TUNE=1 (tuned once in round 1, reused) within 10% at $tuned_good of $total sizes"
