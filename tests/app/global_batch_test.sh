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

python3 - "$work" << 'PY'
import json, struct, sys
work = sys.argv[1]
def read(name):
    b = open(f"{work}/{name}/checkpoint.safetensors", "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n]); base = 8 + n
    meta = head.pop("__metadata__")
    out = {}
    for k, v in head.items():
        if v["dtype"] != "F32" or k.startswith("optimizer."): continue
        s, e = v["data_offsets"]
        out[k] = struct.unpack("<%df" % ((e - s) // 4), b[base + s: base + e])
    return meta, out
ref_meta, ref = read("four")
for name in ("one", "two", "resumed"):
    meta, got = read(name)
    assert (meta["step"], meta["images_seen"]) == ("16", "1024") == (ref_meta["step"], ref_meta["images_seen"]), meta
    worst = max(max(abs(x - y) for x, y in zip(ref[k], got[k])) / (max(abs(t) for t in ref[k]) + 1e-12) for k in ref)
    assert worst < 1e-5, (name, worst)
    print(f"PASS: {name} ends with 4 ranks' weights (worst difference {worst:.2g} of each tensor's largest value)")
PY
