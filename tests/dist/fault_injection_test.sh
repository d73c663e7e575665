#!/usr/bin/env bash
# A fault on one rank, at each point of set-up and of the step, must end the whole job within
# seconds, with that rank's own message first (Note [Fatal errors under MPI] in cli/main.cpp).
# Faults are injected with RINGTRAIN_TEST_FAULT (base/test_fault.h); one is real: a timeline file
# that only rank 0 writes, in a folder that does not exist.
# usage: fault_injection_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
work=$(mktemp -d /tmp/ringtrain_faults_XXXXXX)
trap 'pkill -9 -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT
launch=$(dirname "$0")/../../scripts/mpi_launch.sh  # Open MPI or MPICH, as configured
limit=20
failed=0

# run NAME EXPECTED_FIRST_LINE_REGEX [extra args...], with RINGTRAIN_TEST_FAULT already exported
run() {
  local name=$1 expect=$2
  shift 2
  local start=$SECONDS
  timeout 60 "$launch" --testing --env RINGTRAIN_TEST_FAULT -np 3 "$ringtrain" bench \
    --config "$src/configs/teaching/scaling.toml" --set bench.windows=2 --set bench.steps_per_window=3 \
    --set bench.warmup_steps=2 --set checkpoint.dir="$work/run" "$@" > "$work/$name.out" 2>&1
  local rc=$? elapsed=$((SECONDS - start))
  local first
  first=$(grep -m1 "^ringtrain: rank" "$work/$name.out")
  # Hydra may return while the ranks it SIGKILLed are still being reaped: allow a second.
  for _ in 1 2 3 4 5; do pgrep -f "$work/" > /dev/null || break; sleep 0.2; done
  if [[ $rc -eq 0 || $rc -eq 124 || $elapsed -gt $limit ]]; then
    echo "FAIL $name: exit $rc after ${elapsed} s (expected a non-zero exit within ${limit} s)"; cat "$work/$name.out"; failed=1
  elif ! grep -Eq "$expect" <<< "$first"; then
    echo "FAIL $name: the first rank message is not the failing rank's: '$first' (expected /$expect/)"
    cat "$work/$name.out"; failed=1
  elif pgrep -f "$work/" > /dev/null; then
    echo "FAIL $name: ranks still alive after the job ended"; failed=1
  else
    echo "PASS $name: ended in ${elapsed} s: $first"
  fi
}

for point in open_data collective plan reducer step:3 backward:3 allreduce:3; do
  export RINGTRAIN_TEST_FAULT="1:$point"
  run "fault_${point%%:*}" "^ringtrain: rank 1 of 3 .*injected fault at ${point%%:*} on rank 1"
done
unset RINGTRAIN_TEST_FAULT
export RINGTRAIN_TEST_FAULT=""
run timeline_unwritable "^ringtrain: rank 0 of 3 .*cannot write timeline '$work/missing/timeline.json'" \
  --set log.timeline="$work/missing/timeline.json"
exit $failed
