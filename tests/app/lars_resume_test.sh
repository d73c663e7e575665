#!/usr/bin/env bash
# LARS (Note [LARS]) with polynomial decay in training, on 2 ranks of LeNet on Fashion-MNIST, with
# gradient accumulation and clipping: a run resumed from a checkpoint saved mid-epoch ends with
# every tensor bit-identical to the uninterrupted run; and it trains (the loss falls). With
# "sharded", no clipping, so each rank updates its own part (Note [Norms across shards]).
# usage: lars_resume_test.sh RINGTRAIN SOURCE_DIR [sharded]      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2 mode=${3:-whole}
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_lars_XXXXXX)
trap 'pkill -9 -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh
fashion_mnist_subset "$work/data" 2048 256 || exit 1
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=2
        --set train.threads=1 --set train.batch_per_rank=16 --set train.accumulate_steps=2
        --set train.optimizer='"lars"' --set train.lr_per_256=2 --set train.momentum=0.94
        --set schedule.kind='"poly"' --set schedule.warmup_epochs=0.5
        --set schedule.final_fraction=0.001 --set log.progress=none "${subset_data[@]}")
[[ $mode == sharded ]] || common+=(--set train.clip_grad_norm=5)
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run NAME [args...]
  local name=$1
  shift
  timeout 180 "$launch" --testing -np 2 "$ringtrain" "${common[@]}" "$@" > "$work/$name.out" 2>&1 ||
    { cat "$work/$name.out"; fail "$name: exit $?"; }
}

run whole --set checkpoint.dir="$work/whole"
grep -q "ringtrain: optimizer lars (trust coefficient 0.001" "$work/whole.out" || { cat "$work/whole.out"; fail "no LARS line"; }
if [[ $mode == sharded ]]; then
  grep -q "LARS sharded across ranks" "$work/whole.out" || { cat "$work/whole.out"; fail "the update is not sharded"; }
else
  grep -q "LARS sharded across ranks" "$work/whole.out" && { cat "$work/whole.out"; fail "clipping left it sharded"; }
fi
run saving --set checkpoint.dir="$work/saving" --set checkpoint.every_steps=5 --set checkpoint.keep=0
# Step 10 of 32 per epoch: inside the first epoch, in the warmup's tail.
mid=$(python3 -c 'print(f"checkpoint-{10 * 64:012d}.safetensors")')
[[ -f $work/saving/$mid ]] || fail "no $mid among: $(ls "$work/saving")"
mkdir "$work/resumed" && cp "$work/saving/$mid" "$work/resumed/"
run resumed --set checkpoint.dir="$work/resumed" --resume "$work/resumed"
grep -q "resumed from .*inside epoch 1" "$work/resumed.out" || { cat "$work/resumed.out"; fail "not resumed mid-epoch"; }
python3 "$src/tests/support/same_tensors.py" "$work/whole/checkpoint.safetensors" "$work/resumed/checkpoint.safetensors" ||
  fail "the resumed run's checkpoint differs from the uninterrupted run's"
python3 - "$work/whole/metrics.jsonl" << 'PY' || fail "LARS did not train"
import json, sys
epochs = [r for r in map(json.loads, open(sys.argv[1])) if r["kind"] == "epoch"]
# Falling, and above chance (0.1) on the test set.
assert len(epochs) == 2 and epochs[1]["train_loss"] < epochs[0]["train_loss"], epochs
assert epochs[1]["test_top1"] > 0.3, epochs
print(f"epoch train losses {epochs[0]['train_loss']:.3f}, {epochs[1]['train_loss']:.3f}")
PY
echo "PASS: LARS + poly + accumulation ($([[ $mode == sharded ]] && echo "sharded update" || echo clipping)) resumed mid-epoch is bit-identical; the loss falls"
