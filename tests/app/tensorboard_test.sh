#!/usr/bin/env bash
# log.tensorboard end to end, on 2 ranks of LeNet on a 1024-image subset of Fashion-MNIST (16 steps
# an epoch), the files read by tests/app/tensorboard_check.py (every CRC checked, events parsed by
# Python's protobuf from a .proto with TensorBoard's field numbers):
# - a run writes one event file (rank 0's alone): the file version first, then a session start at
#   step 1, then scalars equal to metrics.jsonl's, step for step; without the key, no file;
# - resumed from an earlier checkpoint, a run opens a second file whose session start at its first
#   step makes TensorBoard drop the first file's later steps, as metrics.jsonl drops their records;
# - kill -9 of rank 0 mid-run leaves a file of whole records, and --auto-resume agrees again;
# - a file cut at the edges of its last records reads up to its last whole record.
# usage: tensorboard_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
py=/usr/bin/python3  # Debian's, with python3-protobuf
command -v protoc > /dev/null || { echo "SKIP: protoc not found (protobuf-compiler)"; exit 77; }
"$py" -c "import google.protobuf" 2> /dev/null || { echo "SKIP: no google.protobuf in $py (python3-protobuf)"; exit 77; }
work=$(mktemp -d /tmp/ringtrain_tb_XXXXXX)
trap 'pkill -9 -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh
fail() { echo "FAIL: $*"; exit 1; }
check() { "$py" "$src/tests/app/tensorboard_check.py" "$@"; }

fashion_mnist_subset "$work/data" 1024 256 > /dev/null || fail "subset"
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=2
        --set train.threads=1 --set train.batch_per_rank=32 --set log.progress=none --set log.tensorboard=true
        --set train.clip_grad_norm=1 --set dist.transport=tcp "${subset_data[@]}")  # TCP: the link figures too
# run NAME NP [args...]: the job's exit status; its output in $work/NAME.out
run() {
  local name=$1 np=$2
  shift 2
  timeout 120 "$launch" --testing -np "$np" "$ringtrain" "${common[@]}" "$@" > "$work/$name.out" 2>&1
}
# shellcheck source=tests/support/rank_jobs.sh
source "$src/tests/support/rank_jobs.sh"
resumed_step() { grep -o "now step [0-9]*" "$1" | grep -o "[0-9]*"; }

# A whole run, saving every 4 steps and keeping every checkpoint.
run whole 2 --set checkpoint.dir="$work/whole" --set checkpoint.every_steps=4 --set checkpoint.keep=0 \
  || { cat "$work/whole.out"; fail "the whole run"; }
check view "$work/whole" 1 || fail "the whole run's event file"
check cuts "$(ls "$work"/whole/events.out.tfevents.*)" || fail "cut copies"

run plain 1 --set checkpoint.dir="$work/plain" --set log.tensorboard=false --set train.epochs=1 \
  || { cat "$work/plain.out"; fail "a run without log.tensorboard"; }
ls "$work"/plain/events.out.tfevents.* > /dev/null 2>&1 && fail "log.tensorboard = false wrote an event file"

# As if the run had stopped after step 12's save: the later checkpoints go, its records stay.
cp -r "$work/whole" "$work/resumed"
for f in "$work"/resumed/checkpoint-*.safetensors; do
  images=$(basename "$f" .safetensors)
  ((10#${images#checkpoint-} > 12 * 64)) && rm "$f"
done
run resumed 2 --set checkpoint.dir="$work/resumed" --auto-resume || { cat "$work/resumed.out"; fail "resume"; }
[[ $(resumed_step "$work/resumed.out") == 12 ]] || { cat "$work/resumed.out"; fail "did not resume at step 12"; }
check view "$work/resumed" 1,13 --purged || fail "the resumed run's event files"

# kill -9 of rank 0, the writer, mid-run (a longer epoch: 8192 images, 128 steps); then resume.
fashion_mnist_subset "$work/data8k" 8192 256 > /dev/null || fail "subset"
dir=$work/killed
run killed 2 --set checkpoint.dir="$dir" --set checkpoint.every_steps=8 --set train.epochs=1 "${subset_data[@]}" &
job=$!
wait_for_steps "$dir" 20 30
kill -9 "$(rank_pid "checkpoint.dir=$dir" 0)" || fail "rank 0 of the killed run not found"
wait "$job" && fail "kill -9: the job succeeded"
check killed "$dir" || fail "the killed run's event file"
run killed_resumed 2 --set checkpoint.dir="$dir" --set checkpoint.every_steps=8 --set train.epochs=1 \
  "${subset_data[@]}" --auto-resume || { cat "$work/killed_resumed.out"; fail "resume after kill -9"; }
step=$(resumed_step "$work/killed_resumed.out")
[[ -n $step ]] || { cat "$work/killed_resumed.out"; fail "the run after kill -9 did not resume"; }
check view "$dir" "1,$((step + 1))" || fail "the event files after kill -9 and resume"
echo "PASS: TensorBoard's reading of the event files equals metrics.jsonl after a run, a resume and a kill -9"
