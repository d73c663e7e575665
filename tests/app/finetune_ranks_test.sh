#!/usr/bin/env bash
# Fine-tuning across ranks (Note [Fine-tuning] in app/init_weights.h): resnet18 started from a
# ringtrain checkpoint of 12 classes with a new 10-class head and conv1, bn1, layer1 and layer2
# frozen, 5 steps of a global batch of 32 on Fashion-MNIST: 2 ranks x 16 (batch norm pooled over
# both, train.bn_group = 2) end where 1 rank x 32 does, to summation-order rounding; both leave
# every frozen tensor bit-identical to the file and average fewer floats, as the start line says;
# LARS, clipping, accumulation, PowerSGD and the bf16 wire together keep the frozen tensors too;
# and a 2-rank fine-tune resumed after step 2, with the weights file gone, ends bit-identical to
# the uninterrupted one.
# usage: finetune_ranks_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_finetune_XXXXXX)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh

# The file: 30 steps on 960 images, so that the running statistics the frozen batch norm keeps
# describe its inputs (after 5 steps they do not, and channels all but constant after them make
# batch norm's gradient amplify rounding a hundredfold). The fine-tune: 5 steps on the first 160.
fashion_mnist_subset "$work/first" 960 64 || exit 1
first=("${subset_data[@]}")
fashion_mnist_subset "$work/data" 160 64 || exit 1
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=resnet18 --set train.epochs=1
        --set train.threads=1 --set log.progress=none --set schedule.kind=constant
        --set schedule.warmup_epochs=0 --set train.lr_per_256=0 --set train.lr=0.02)
run() {  # run NAME NP [args...]
  local name=$1 np=$2
  shift 2
  timeout 200 "$launch" --testing -np "$np" "$ringtrain" "${common[@]}" --set checkpoint.dir="$work/$name" "$@" \
    > "$work/$name.out" 2>&1 || { echo "FAIL: run $name"; cat "$work/$name.out"; exit 1; }
}
run pretrained 1 "${first[@]}" --set model.num_classes=12 --set train.batch_per_rank=32
mv "$work/pretrained/$(readlink "$work/pretrained/checkpoint.safetensors")" "$work/pretrained.safetensors"
tune=("${subset_data[@]}" --set model.num_classes=10 --set finetune.weights="$work/pretrained.safetensors"
      --set 'finetune.freeze="conv1,bn1,layer1,layer2"')
run one_rank 1 "${tune[@]}" --set train.batch_per_rank=32
run two_ranks 2 "${tune[@]}" --set train.batch_per_rank=16 --set train.bn_group=2 --set checkpoint.every_steps=2 \
  --set checkpoint.keep=0
for name in one_rank two_ranks; do
  grep -q "tensors loaded, 2 at their initialisation" "$work/$name.out" && grep -q "fc.weight: new head ((12, 512) in the file, (10, 512) here)" "$work/$name.out" \
    || { echo "FAIL: $name does not say what it loaded"; cat "$work/$name.out"; exit 1; }
  grep -q "parameters in 32 of 62 tensors train (frozen: conv1, bn1, layer1, layer2); a step averages" "$work/$name.out" \
    || { echo "FAIL: $name does not say what trains"; cat "$work/$name.out"; exit 1; }
done

# Every composition at once, 2 ranks: LARS, clipping, 2 micro-batches, PowerSGD from the first
# step (sharded update off under it), the bf16 wire; checked below: the frozen tensors stay the
# file's and get no momentum, and PowerSGD compresses no frozen tensor.
run composed 2 "${tune[@]}" --set train.batch_per_rank=8 --set train.accumulate_steps=2 --set train.optimizer=lars \
  --set train.lr=2 --set train.clip_grad_norm=1 --set dist.compression=powersgd --set dist.powersgd_start_step=0 \
  --set dist.wire=bf16
"$ringtrain" info "${common[@]}" "${tune[@]}" --set dist.compression=powersgd > "$work/info.out" 2>&1 \
  || { echo "FAIL: info"; cat "$work/info.out"; exit 1; }
grep -q "tensors compressed" "$work/info.out" && ! grep -E "^    (conv1|bn1|layer1|layer2)\." "$work/info.out" \
  || { echo "FAIL: PowerSGD lists a frozen tensor, or nothing"; cat "$work/info.out"; exit 1; }

# The resume: the checkpoint after step 2 (64 images) alone in a folder, the file moved away.
mkdir "$work/resumed"
cp "$work/two_ranks/checkpoint-000000000064.safetensors" "$work/two_ranks/config.toml" "$work/resumed/" || exit 1
ln -s checkpoint-000000000064.safetensors "$work/resumed/checkpoint.safetensors"
mv "$work/pretrained.safetensors" "$work/moved.safetensors"
timeout 200 "$launch" --testing -np 2 "$ringtrain" "${common[@]}" "${tune[@]}" --set train.batch_per_rank=16 \
  --set train.bn_group=2 --set checkpoint.dir="$work/resumed" --resume "$work/resumed" > "$work/resumed.out" 2>&1 \
  || { echo "FAIL: the resume"; cat "$work/resumed.out"; exit 1; }
grep -q "finetune.weights" "$work/resumed.out" && grep -q "started from" "$work/resumed.out" \
  && { echo "FAIL: the resume read the weights file again"; cat "$work/resumed.out"; exit 1; }
mv "$work/moved.safetensors" "$work/pretrained.safetensors"

python3 - "$work" << 'PY'
import json, struct, sys
work = sys.argv[1]
def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n]); base = 8 + n
    meta = head.pop("__metadata__", {})
    return meta, {k: b[base + v["data_offsets"][0]: base + v["data_offsets"][1]] for k, v in head.items()}, head
_, file, _ = read(f"{work}/pretrained.safetensors")
frozen = lambda k: k.split(".")[0] in ("conv1", "bn1", "layer1", "layer2")
one_meta, one, heads = read(f"{work}/one_rank/checkpoint.safetensors")
two_meta, two, _ = read(f"{work}/two_ranks/checkpoint.safetensors")
assert one_meta["step"] == two_meta["step"] == "5", (one_meta["step"], two_meta["step"])
_, composed, _ = read(f"{work}/composed/checkpoint.safetensors")
for name, state in (("one_rank", one), ("two_ranks", two), ("composed", composed)):
    for k in state:
        if frozen(k):
            assert state[k] == file[k], f"{name}: frozen {k} is not the file's"
        assert not (k.startswith("optimizer.") and frozen(k[len("optimizer.momentum."):])), f"{name}: momentum of frozen {k}"
worst = 0.0
for k, v in one.items():
    if frozen(k) or heads[k]["dtype"] != "F32" or k.startswith("optimizer."):
        continue
    a = struct.unpack("<%df" % (len(v) // 4), v)
    b = struct.unpack("<%df" % (len(v) // 4), two[k])
    scale = max(abs(x) for x in a) + 1e-12
    worst = max(worst, max(abs(x - y) for x, y in zip(a, b)) / scale)
assert worst < 1e-4, worst
print(f"PASS: 2 ranks x 16 end at 1 rank x 32's weights (worst difference {worst:.2g} of each tensor's largest value); "
      "frozen tensors are the file's")
PY
[[ $? -eq 0 ]] || exit 1
python3 "$src/tests/support/same_tensors.py" "$work/two_ranks/checkpoint.safetensors" "$work/resumed/checkpoint.safetensors" \
  || { echo "FAIL: the resumed fine-tune is not bit-identical to the uninterrupted one"; exit 1; }
