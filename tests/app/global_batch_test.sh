#!/usr/bin/env bash
# A fixed global batch (Note [Fixed global batch] in config/batch_shape.h): LeNet (no batch norm,
# no dropout) with train.global_batch = 64 and micro-batches of at most 16, on 1, 2 and 4 ranks
# (1 x 4, 2 x 2 and 4 x 1 micro-batches of 16), 16 steps: all end with the same weights to
# summation-order rounding; a 4-rank run saved after step 8 and resumed on 2 ranks ends where the
# 4-rank run does (the recipe survives losing half the ranks); 3 ranks are refused by name.
# usage: global_batch_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_global_batch_XXXXXX)
trap 'rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh

fashion_mnist_subset "$work/data" 1024 256 || exit 1
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=1 --set train.threads=1
        --set log.progress=none "${subset_data[@]}" --set schedule.warmup_epochs=0 --set train.global_batch=64
        --set train.batch_per_rank=16)
run() {  # run NAME NP [args...]
  local name=$1 np=$2
  shift 2
  timeout 200 "$launch" --testing -np "$np" "$ringtrain" "${common[@]}" --set checkpoint.dir="$work/$name" "$@" \
    > "$work/$name.out" 2>&1 || { echo "FAIL: run $name"; cat "$work/$name.out"; exit 1; }
}
run one 1
run two 2
run four 4 --set checkpoint.every_steps=8 --set checkpoint.keep=0
grep -q "global batch 64 (fixed by train.global_batch: 16 per rank x 2 micro-batches" "$work/two.out" \
  || { echo "FAIL: the start line does not say how the global batch was divided"; cat "$work/two.out"; exit 1; }

mkdir "$work/resumed"
cp "$work/four/checkpoint-000000000512.safetensors" "$work/four/config.toml" "$work/resumed/" || exit 1
ln -s checkpoint-000000000512.safetensors "$work/resumed/checkpoint.safetensors"
timeout 200 "$launch" --testing -np 2 "$ringtrain" "${common[@]}" --set checkpoint.dir="$work/resumed" \
  --resume "$work/resumed" > "$work/resumed.out" 2>&1 || { echo "FAIL: the resume on 2 ranks"; cat "$work/resumed.out"; exit 1; }
grep -q "now step 8" "$work/resumed.out" || { echo "FAIL: the resume is not at step 8"; cat "$work/resumed.out"; exit 1; }

if timeout 60 "$launch" --testing -np 3 "$ringtrain" "${common[@]}" --set checkpoint.dir="$work/three" \
  > "$work/three.out" 2>&1; then
  echo "FAIL: 64 images among 3 ranks ran"; exit 1
fi
grep -q "train.global_batch = 64 does not divide among 3 ranks" "$work/three.out" \
  || { echo "FAIL: 3 ranks are not refused by name"; cat "$work/three.out"; exit 1; }

# Every run counts 16 steps of 64 (the newest checkpoint's name is the images seen), and ends with
# the 4-rank run's weights and momentum to summation-order rounding.
for name in one two resumed; do
  [[ $(readlink "$work/$name/checkpoint.safetensors") == checkpoint-000000001024.safetensors ]] \
    || { echo "FAIL: $name did not end after 1024 images"; ls -l "$work/$name"; exit 1; }
done
python3 "$src/tests/support/close_tensors.py" 1e-5 "$work/four/checkpoint.safetensors" "$work/one/checkpoint.safetensors" \
  "$work/two/checkpoint.safetensors" "$work/resumed/checkpoint.safetensors" || { echo "FAIL: the weights differ"; exit 1; }
