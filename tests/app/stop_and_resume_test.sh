#!/usr/bin/env bash
# Long runs under a scheduler (docs/long_runs.md), end to end on 2 ranks of LeNet on Fashion-MNIST, one
# epoch of 937 steps: a signal to ONE rank mid-epoch makes both save the same step and exit 75;
# resumed at 2 ranks the run ends with every tensor bit-identical to an uninterrupted one, and
# metrics.jsonl holds steps 1..937 once each; resumed at 1 rank it finishes the epoch's remaining
# samples; kill -9 of a rank at several moments, with a save every 50 steps, always leaves a
# folder that --auto-resume finishes, bit-identical again.
# usage: stop_and_resume_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_stop_XXXXXX)
trap 'pkill -9 -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh  # Open MPI or MPICH, as configured
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=1
        --set train.threads=1 --set train.batch_per_rank=32 --set log.progress=none)
fail() { echo "FAIL: $*"; exit 1; }

# run NAME NP [args...]: the job's exit status; its output in $work/NAME.out
run() {
  local name=$1 np=$2
  shift 2
  timeout 120 "$launch" --testing -np "$np" "$ringtrain" "${common[@]}" "$@" > "$work/$name.out" 2>&1
}
# shellcheck source=tests/support/rank_jobs.sh
source "$src/tests/support/rank_jobs.sh"
# signal_one_rank NAME DIR RANK SIGNAL AFTER_STEPS [args...]: starts a 2-rank job, sends SIGNAL to
# RANK once AFTER_STEPS steps are logged; the job's exit status in $stopped_rc
signal_one_rank() {
  local name=$1 dir=$2 rank=$3 signal=$4 after=$5
  shift 5
  run "$name" 2 --set checkpoint.dir="$dir" "$@" &
  local job=$!
  wait_for_steps "$dir" "$after"
  local pid
  pid=$(rank_pid "checkpoint.dir=$dir" "$rank")
  [[ -n $pid ]] || fail "$name: rank $rank not found"
  kill -"$signal" "$pid"
  wait "$job"
  stopped_rc=$?
}
same_tensors() { python3 "$src/tests/support/same_tensors.py" "$1" "$2"; }  # every tensor, bit for bit
steps_once() {  # steps_once DIR N: the step records are 1..N, each once
  python3 - "$1/metrics.jsonl" "$2" << 'PY'
import json, sys
steps = [json.loads(l)["step"] for l in open(sys.argv[1]) if '"kind":"step"' in l]
epochs = [json.loads(l)["epoch"] for l in open(sys.argv[1]) if '"kind":"epoch"' in l]
want = list(range(1, int(sys.argv[2]) + 1))
sys.exit(0 if steps == want and epochs == [1] else f"steps {steps[:3]}...{steps[-3:]} ({len(steps)}), epochs {epochs}")
PY
}

run whole 2 --set checkpoint.dir="$work/whole" || { cat "$work/whole.out"; fail "uninterrupted run"; }

# SIGUSR1 to rank 1 only; resumed at 2 ranks.
signal_one_rank usr1 "$work/usr1" 1 USR1 100
[[ $stopped_rc -eq 75 ]] || { cat "$work/usr1.out"; fail "SIGUSR1 to rank 1: exit $stopped_rc, expected 75"; }
grep -q "SIGUSR1 reached 1 rank(s); saved .* after step" "$work/usr1.out" || { cat "$work/usr1.out"; fail "no save line"; }
saved=$(grep -o "after step [0-9]*" "$work/usr1.out" | grep -o "[0-9]*")
((saved > 100 && saved < 937)) || fail "saved after step $saved, expected inside the epoch"
run usr1_resumed 2 --set checkpoint.dir="$work/usr1" --auto-resume || { cat "$work/usr1_resumed.out"; fail "resume at 2 ranks"; }
grep -q "resumed from .*inside epoch 1" "$work/usr1_resumed.out" || fail "the resume did not say where it went on"
same_tensors "$work/whole/checkpoint.safetensors" "$work/usr1/checkpoint.safetensors" || fail "SIGUSR1 then resume at 2 ranks"
steps_once "$work/usr1" 937 || fail "metrics after SIGUSR1 and resume"
echo "PASS: SIGUSR1 to rank 1 saved step $saved on both ranks (exit 75); resumed, bit-identical, steps once each"

# SIGTERM to rank 0 only; resumed at 1 rank: the epoch's remaining samples at 32 a step.
signal_one_rank term "$work/term" 0 TERM 100
[[ $stopped_rc -eq 75 ]] || { cat "$work/term.out"; fail "SIGTERM to rank 0: exit $stopped_rc, expected 75"; }
saved=$(grep -o "after step [0-9]*" "$work/term.out" | grep -o "[0-9]*")
run term_resumed 1 --set checkpoint.dir="$work/term" --auto-resume || { cat "$work/term_resumed.out"; fail "resume at 1 rank"; }
python3 - "$work/term/metrics.jsonl" "$saved" << 'PY' || fail "resume at 1 rank"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
steps = [r["step"] for r in records if r["kind"] == "step"]
saved = int(sys.argv[2])
left = (60000 - saved * 64) // 32  # the remaining samples, whole batches of 32 (tail dropped)
assert steps[:saved] == list(range(1, saved + 1)), steps[:saved + 2]
assert len(steps) == saved + left and steps == sorted(set(steps)), (len(steps), saved, left)
top1 = [r["test_top1"] for r in records if r["kind"] == "epoch"]
assert len(top1) == 1 and top1[0] > 0.8, top1
print(f"PASS: SIGTERM to rank 0 saved step {saved}; resumed at 1 rank for the {left} remaining steps, test top-1 {top1[0]:.3f}")
PY

# kill -9 of one rank, at three moments, saving every 50 steps; --auto-resume each time.
dir=$work/killed
for at in 30 240 520; do
  run "killed_$at" 2 --set checkpoint.dir="$dir" --set checkpoint.every_steps=50 --set checkpoint.keep=2 --auto-resume &
  job=$!
  wait_for_steps "$dir" "$at"
  kill -9 "$(rank_pid "checkpoint.dir=$dir" $((at % 2)))"
  wait "$job" && fail "kill -9 at step $at: the job succeeded"
  ls "$dir"/*.tmp > /dev/null 2>&1 && echo "note: a save was cut short at step $at"
done
run killed_done 2 --set checkpoint.dir="$dir" --set checkpoint.every_steps=50 --set checkpoint.keep=2 --auto-resume \
  || { cat "$work/killed_done.out"; fail "resume after kill -9"; }
same_tensors "$work/whole/checkpoint.safetensors" "$dir/checkpoint.safetensors" || fail "after three kill -9 and resumes"
steps_once "$dir" 937 || fail "metrics after kill -9"
(($(ls "$dir"/checkpoint-*.safetensors | wc -l) == 2)) || fail "checkpoint.keep = 2 left $(ls "$dir")"
echo "PASS: kill -9 at steps 30, 240 and 520, each resumed with --auto-resume: bit-identical, steps once, 2 kept"
