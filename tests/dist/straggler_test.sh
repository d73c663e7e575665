#!/usr/bin/env bash
# Note [Naming the straggler] (app/run/straggler_report.h), judged from outside the report's
# arithmetic, LeNet on a Fashion-MNIST subset, 2 epochs:
# - 4 ranks, a test fault adding 40 ms to rank 2's every step: each epoch's report names rank 2,
#   as compute, on the flat ring and on the two-level ring (2 fake hosts x 2 ranks, rank 1 slowed
#   there, and with PowerSGD's two rounds a bucket); metrics.jsonl's epoch records name it as the
#   worst rank.
# - 2 ranks, each confined to its own core, busy processes sharing rank 1's: rank 1 is named.
# - the same jobs without the fault or the busy process: no report.
# - SIGUSR2 to one rank of a running job: the report of the epoch so far at the next step, and the
#   job goes on to its end.
# usage: straggler_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_straggler_XXXXXX)
busy=
trap '[[ -n $busy ]] && kill $busy 2>/dev/null; rm -rf "$work"' EXIT
fashion_mnist_subset "$work/data" 2048 256 || exit 1
launch=$src/scripts/mpi_launch.sh
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=2
        --set train.batch_per_rank=32 --set train.threads=1 --set log.progress=none "${subset_data[@]}")
fail=0
reports() { grep -c '^ringtrain: rank [0-9]* (.*) computed .* ms a step over the median' "$1"; }
named() {  # LOG METRICS RANK WHAT
  local n
  n=$(grep -c "^ringtrain: rank $3 (.*) computed .* over the median (+[0-9]*%); the ring waited on it in" "$1")
  if [[ $n -eq 2 && $(reports "$1") -eq 2 ]] &&
     [[ $(grep -c "\"kind\":\"epoch\".*\"worst_rank\":$3,.*\"straggler\":\"rank $3 " "$2") -eq 2 ]]; then
    echo "PASS: $4: rank $3 named after both epochs: $(grep -m1 "^ringtrain: rank $3 " "$1")"
  else
    echo "FAIL: $4: rank $3 should be named after both epochs"; grep -E "^(epoch|ringtrain: rank)" "$1"; fail=1
  fi
}
silent() {  # LOG METRICS WHAT
  if [[ $(reports "$1") -eq 0 ]] && ! grep -q '"straggler"' "$2" && grep -q '"compute_ms_median"' "$2"; then
    echo "PASS: $3: no report, and the figures in metrics.jsonl"
  else
    echo "FAIL: $3: a report without a straggler, or no figures"; grep -E "^(epoch|ringtrain: rank)" "$1"; fail=1
  fi
}
run() {  # NAME NP [ENV...] -- [ARGS...]
  local name=$1 np=$2; shift 2
  local env=()
  while [[ $# -gt 0 && $1 != -- ]]; do env+=("$1"); shift; done
  shift
  env "${env[@]}" timeout 180 "$launch" --testing -np "$np" "$ringtrain" "${common[@]}" "$@" \
    --set checkpoint.dir="$work/$name" > "$work/$name.log" 2>&1 || { echo "FAIL: $name did not finish"; tail -20 "$work/$name.log"; fail=1; }
}

run flat_fault 4 RINGTRAIN_TEST_FAULT=2:slow_step --
named "$work/flat_fault.log" "$work/flat_fault/metrics.jsonl" 2 "flat ring, 40 ms added to rank 2"
run two_level_fault 4 RINGTRAIN_TEST_FAULT=1:slow_step RINGTRAIN_FAKE_HOST_RANKS=2 -- --set dist.hierarchy=two_level
named "$work/two_level_fault.log" "$work/two_level_fault/metrics.jsonl" 1 "two-level ring, 40 ms added to rank 1"
run powersgd_fault 4 RINGTRAIN_TEST_FAULT=2:slow_step -- --set dist.compression=powersgd --set dist.powersgd_start_step=0
named "$work/powersgd_fault.log" "$work/powersgd_fault/metrics.jsonl" 2 "PowerSGD's two rounds, 40 ms added to rank 2"
run flat_clean 4 --
silent "$work/flat_clean.log" "$work/flat_clean/metrics.jsonl" "flat ring at 4 ranks, no fault"
run two_level_clean 4 RINGTRAIN_FAKE_HOST_RANKS=2 -- --set dist.hierarchy=two_level
silent "$work/two_level_clean.log" "$work/two_level_clean/metrics.jsonl" "two-level ring at 4 ranks, no fault"

# SIGUSR2 to rank 3 once the job has trained 10 steps of its second epoch (16 steps each): the
# report of that epoch so far, then the job goes on. Not in the first epoch: its start-up steps'
# waits are few and uneven, and on a loaded machine they hid which rank the others waited for
# (over 4 steps under MPICH: "no rank or link stands out: compute 19.3 ms a step at the median,
# 52.1 ms on rank 2"; over 13 steps in CI's -j2 suite: "... 11.8 ms ..., 47.7 ms on rank 2").
RINGTRAIN_TEST_FAULT=2:slow_step timeout 180 "$launch" --testing -np 4 "$ringtrain" "${common[@]}" \
  --set train.epochs=4 --set checkpoint.dir="$work/on_demand" > "$work/on_demand.log" 2>&1 &
job=$!
for _ in $(seq 1500); do
  [[ $(grep -cs '"kind":"step"' "$work/on_demand/metrics.jsonl") -ge 26 ]] && break  # a record a step
  sleep 0.02
done
pids=($(pgrep -f "checkpoint.dir=$work/on_demand" | sort -n))
victim=$(for p in "${pids[@]}"; do [[ $(ps -o comm= -p "$p") == ringtrain ]] && echo "$p"; done | tail -1)
[[ -n $victim ]] && kill -USR2 "$victim"
wait "$job"
status=$?
line=$(grep -m1 '^ringtrain: on SIGUSR2, at step [0-9]*: rank 2 (.*) computed .* over the median' "$work/on_demand.log")
if [[ $status -eq 0 && -n $line ]] && grep -q '^epoch 4/4' "$work/on_demand.log"; then
  echo "PASS: SIGUSR2 to one rank: $line; the job went on to its end"
else
  echo "FAIL: SIGUSR2 should print the report and leave the job running (status $status)"
  grep -E "^(epoch|ringtrain)" "$work/on_demand.log" | tail; fail=1
fi

# Each rank on a core of its own; then a busy process on rank 1's.
if [[ $(nproc) -ge 2 ]] && command -v taskset > /dev/null; then
  cat > "$work/pin.sh" <<'PIN'
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
exec taskset -c "$rank" "$@"
PIN
  pinned=(--set model.name=resnet_mini)
  # Nothing of the test's beside them; but on a shared machine something else may take one core for
  # a while (CI's suite once slowed rank 1 by 22%, 7 ms a step, past the 20% margin). Such noise
  # does not recur on demand, a report the code makes up does: a reported job runs once more, and
  # the second must be silent.
  for clean in pinned_clean pinned_clean_again; do
    env timeout 180 "$launch" --testing -np 2 bash "$work/pin.sh" "$ringtrain" "${common[@]}" "${pinned[@]}" \
      --set checkpoint.dir="$work/$clean" > "$work/$clean.log" 2>&1 || { echo "FAIL: the pinned job did not finish"; fail=1; }
    [[ $(reports "$work/$clean.log") -eq 0 ]] && break
    echo "NOTE: $clean: $(grep -m1 '^ringtrain: rank' "$work/$clean.log")"
  done
  silent "$work/$clean.log" "$work/$clean/metrics.jsonl" "2 pinned ranks, nothing beside them"
  # Two busy loops on rank 1's core. Above the machine's other work where we may (root: nice -5,
  # each weighing three processes of nice 0), so that rank 1 keeps at most a seventh of its core
  # whatever else runs: load from outside, which the scheduler then moves to rank 0's core, slowed
  # rank 1 too little beside loops of equal weight to name it.
  ahead=()
  nice -n -5 true 2> /dev/null && ahead=(nice -n -5)
  "${ahead[@]}" taskset -c 1 bash -c 'while :; do :; done' &
  busy=$!
  "${ahead[@]}" taskset -c 1 bash -c 'while :; do :; done' &
  busy="$busy $!"
  env timeout 180 "$launch" --testing -np 2 bash "$work/pin.sh" "$ringtrain" "${common[@]}" "${pinned[@]}" \
    --set checkpoint.dir="$work/pinned_busy" > "$work/pinned_busy.log" 2>&1 || { echo "FAIL: the busy job did not finish"; fail=1; }
  kill $busy
  busy=
  named "$work/pinned_busy.log" "$work/pinned_busy/metrics.jsonl" 1 "2 pinned ranks, two busy processes on rank 1's core"
else
  echo "SKIP: the pinned cases need 2 cores and taskset"
fi
exit $fail
