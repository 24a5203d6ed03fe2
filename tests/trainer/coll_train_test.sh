#!/bin/bash
# coll-train end to end: `case` names one check (ctest runs each as its own test).
#   digits_accuracy  4 ranks reach 1 rank's digits test accuracy (same global batch) within 1 point
#   json             --json ends with one line holding the four figures; --no-overlap runs too
#   teacher_trace    the teacher task trains (accuracy above chance) and --trace holds every rank
#   check_hash       parameters bit-identical on every rank after every step (ZeRO-1, bf16 hook)
#   bad_input        unknown options and a batch not divisible by the ranks fail with a message
#   elastic          --elastic on 4 ranks: rank 2 killed at step 20, the others shrink and go on,
#                    a replacement joins at the next grow; 60 steps on every replica, none lost,
#                    replicas bit-identical, the loss close to an uninterrupted run's
#   elastic_pipeline --elastic --stages 2 on 4 ranks (2 replicas of 2 stages): rank 3 killed at
#                    step 20, replica 0 goes on alone while rank 2 sits out, a replacement and
#                    rank 2 form replica 1 again; 60 steps, stages bit-identical across replicas
# usage: coll_train_test.sh COLLRUN COLL_TRAIN CASE   (the digits CSV: $COLL_DIGITS_CSV)
set -euo pipefail
collrun=$1 train=$2 case=$3
work=$(mktemp -d /tmp/coll-train-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() { timeout 300 "$collrun" --no-prefix "$@"; }
field() { /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])[sys.argv[1]])' "$1"; }
fail() { echo "FAIL: $*"; exit 1; }

case $case in
  digits_accuracy)
    one=$(run -n 1 "$train" --epochs 25 --batch 64 --json | tee "$work/one" | field test_accuracy)
    four=$(run -n 4 "$train" --epochs 25 --batch 64 --json | tee "$work/four" | field test_accuracy)
    cat "$work/one" "$work/four"
    /usr/bin/python3 -c "import sys; a, b = float('$one'), float('$four'); print(f'1 rank {a:.4f}, 4 ranks {b:.4f}');
sys.exit(0 if abs(a - b) <= 0.01 and a > 0.9 else 1)" || fail "accuracies differ by more than 1 point"
    ;;
  json)
    out=$(run -n 2 "$train" --epochs 2 --json)
    echo "$out"
    for k in median_step_ms hidden_fraction final_loss test_accuracy; do
      [[ -n $(field $k <<<"$out") ]] || fail "no $k"
    done
    [[ $(field overlap <<<"$out") == True ]] || fail "overlap not reported"
    out=$(run -n 2 "$train" --epochs 1 --no-overlap --json)
    echo "$out"
    [[ $(field overlap <<<"$out") == False ]] || fail "--no-overlap not reported"
    grep -q "one all-reduce after backward" <<<"$out" || fail "--no-overlap not in the header"
    ;;
  teacher_trace)
    out=$(run -n 3 "$train" --task teacher --width 64 --layers 3 --examples 3072 --batch 48 --epochs 3 \
      --bucket-mb 0.01 --json --trace "$work/trace.json")
    echo "$out"
    acc=$(field test_accuracy <<<"$out")
    /usr/bin/python3 -c "import sys; sys.exit(0 if float('$acc') > 0.3 else 1)" || fail "teacher accuracy $acc at chance"
    /usr/bin/python3 - "$work/trace.json" <<'PY' || fail "trace"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
pids = sorted({e["pid"] for e in events})
lanes = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "X"}
print("trace: pids", pids, "lanes with events", sorted(lanes))
assert pids == [0, 1, 2], pids
assert all((p, 0) in lanes and (p, 1) in lanes for p in pids), "compute and communication on every rank"
PY
    ;;
  check_hash)
    run -n 3 "$train" --epochs 2 --batch 48 --zero --check-hash --json
    run -n 2 "$train" --epochs 1 --compress bf16 --batchnorm --check-hash --json
    ;;
  pipeline)
    # 2 stages x 2 replicas on digits (with cross-replica batch norm): the loss falls; 4 stages
    # of the teacher with GPipe hold all 8 micro-batches, with 1F1B 4, 3, 2, 1.
    run -n 4 "$train" --stages 2 --micro-batches 4 --schedule 1f1b --epochs 4 --batchnorm >"$work/out"
    cat "$work/out"
    first=$(grep -m1 "^epoch" "$work/out" | awk '{print $4}') last=$(grep "^epoch" "$work/out" | tail -1 | awk '{print $4}')
    /usr/bin/python3 -c "import sys; sys.exit(0 if float('$last') < 0.8 * float('$first') else 1)" || fail "loss $first -> $last"
    run -n 4 "$train" --task teacher --width 32 --layers 5 --examples 512 --stages 4 --micro-batches 8 --schedule gpipe \
      --epochs 1 | grep -q "peak per stage: micro-batches alive 8 8 8 8;" || fail "gpipe on 4 stages"
    run -n 4 "$train" --task teacher --width 32 --layers 5 --examples 512 --stages 4 --micro-batches 8 --schedule 1f1b \
      --epochs 1 | grep -q "peak per stage: micro-batches alive 4 3 2 1;" || fail "1f1b on 4 stages"
    if run -n 4 "$train" --stages 3 2>"$work/err" >/dev/null; then fail "3 stages on 4 ranks accepted"; fi
    grep -q -- "--stages 3 does not divide 4 ranks" "$work/err" || fail "unclear message: $(cat "$work/err")"
    ;;
  elastic)
    args=(--elastic --optimizer sgd --steps 60 --batch 60 --grow-every 5)
    "$collrun" --no-prefix -n 4 "$train" "${args[@]}" >"$work/whole" 2>&1 || fail "the uninterrupted run: $(cat "$work/whole")"
    set +e
    timeout 300 "$collrun" --no-prefix -n 4 --kill-after 0 "$train" "${args[@]}" --kill-rank 2 --kill-at 20 --respawn \
      >"$work/faulty" 2>&1
    set -e
    grep "^elastic" "$work/faulty"
    grep -q "rank 2 (pid [0-9]*) killed by signal 9" "$work/faulty" || fail "rank 2 was not killed"
    grep -q "step 20: lost 1 replica(s)" "$work/faulty" || fail "no loss reported at step 20"
    grep -q "a new replica joined as rank 3 of 4" "$work/faulty" || fail "no replacement joined"
    grep -q "grew from 3 to 4 replicas" "$work/faulty" || fail "the job did not grow back"
    grep -q "done: 60 steps on every replica (lowest 60), 4 replicas at the end, 1 fault(s) survived, parameters identical on every replica: yes" \
      "$work/faulty" || fail "the run did not end as it should"
    whole=$(grep -o "step   60  loss [0-9.]*" "$work/whole" | awk '{print $4}')
    faulty=$(grep -o "step   60  loss [0-9.]*" "$work/faulty" | awk '{print $4}')
    echo "loss at step 60 (rank 0's part): uninterrupted $whole, with a kill and a rejoin $faulty"
    /usr/bin/python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 0.02 * a)" \
      "$whole" "$faulty" || fail "the loss differs by more than 2%: $whole against $faulty"
    ;;
  elastic_pipeline)
    args=(--elastic --stages 2 --micro-batches 2 --optimizer sgd --steps 60 --batch 60 --grow-every 5)
    "$collrun" --no-prefix -n 4 "$train" "${args[@]}" >"$work/whole" 2>&1 || fail "the uninterrupted run: $(cat "$work/whole")"
    set +e
    timeout 300 "$collrun" --no-prefix -n 4 --kill-after 0 "$train" "${args[@]}" --kill-rank 3 --kill-at 20 --respawn \
      >"$work/faulty" 2>&1
    set -e
    grep "^elastic" "$work/faulty"
    grep -q "rank 3 (pid [0-9]*) killed by signal 9" "$work/faulty" || fail "rank 3 was not killed"
    grep -q "step 20: lost 1 rank(s)" "$work/faulty" || fail "no loss reported at step 20"
    grep -q "step 20: 3 ranks: 1 replica(s) (1 kept, 0 new), 1 sitting out, resuming at step 20" "$work/faulty" ||
      fail "the broken replica's survivor did not sit out"
    grep -q "elastic: joined as rank" "$work/faulty" || fail "no replacement joined"
    grep -q "2 replica(s) (1 kept, 1 new), 0 sitting out" "$work/faulty" || fail "the job did not grow back"
    grep -q "done: 60 steps on every replica (lowest 60), 2 replicas of 2 stages at the end, 1 fault(s) survived, every stage's parameters identical on its replicas: yes" \
      "$work/faulty" || fail "the run did not end as it should"
    whole=$(grep -o "step   60  loss [0-9.]*" "$work/whole" | awk '{print $4}')
    faulty=$(grep -o "step   60  loss [0-9.]*" "$work/faulty" | awk '{print $4}')
    echo "loss at step 60 (replica 0's part): uninterrupted $whole, with a kill and a rejoin $faulty"
    /usr/bin/python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 0.02 * a)" \
      "$whole" "$faulty" || fail "the loss differs by more than 2%: $whole against $faulty"
    ;;
  bad_input)
    if "$train" --frobnicate 2>"$work/err"; then fail "unknown option accepted"; fi
    grep -q "unknown option --frobnicate" "$work/err" || fail "unclear message: $(cat "$work/err")"
    if run -n 3 "$train" --batch 64 2>"$work/err" >/dev/null; then fail "batch 64 on 3 ranks accepted"; fi
    grep -q "not a multiple of 3 ranks" "$work/err" || fail "unclear message: $(cat "$work/err")"
    # Into a file, not a pipe: grep -q exits at the first match, and under pipefail the help's
    # writer, killed by SIGPIPE while printing the rest, fails the pipeline now and then.
    "$train" --help > "$work/help" || fail "--help exited non-zero"
    grep -q -- "--no-overlap" "$work/help" || fail "--help"
    ;;
  *) fail "unknown case $case" ;;
esac
echo OK
