#!/usr/bin/env bash
# Gradient accumulation (Note [Gradient accumulation]): on LeNet (no batch norm, no dropout), 16
# steps of a global batch of 64 taken as 1 rank x 16 images x 4 micro-batches, as 2 ranks x 32, as
# 2 ranks x 16 x 2 micro-batches (the sums added as the reducer takes each gradient) and as 1 rank
# x 64 end with the same weights, to summation-order rounding, and all count 16 steps of 64.
# usage: accumulation_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_accumulate_XXXXXX)
trap 'rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh  # Open MPI or MPICH, as configured

# A subset: 1,024 training and 256 test images, as IDX files.
fashion_mnist_subset "$work/data" 1024 256 || exit 1
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=1 --set train.threads=1
        --set log.progress=none "${subset_data[@]}" --set schedule.warmup_epochs=0)
run() {  # run NAME NP [args...]
  local name=$1 np=$2
  shift 2
  timeout 120 "$launch" --testing -np "$np" "$ringtrain" "${common[@]}" --set checkpoint.dir="$work/$name" "$@" \
    > "$work/$name.out" 2>&1 || { echo "FAIL: run $name"; cat "$work/$name.out"; exit 1; }
}
run accumulated 1 --set train.batch_per_rank=16 --set train.accumulate_steps=4
run two_ranks 2 --set train.batch_per_rank=32
run two_ranks_accumulated 2 --set train.batch_per_rank=16 --set train.accumulate_steps=2
run one_rank 1 --set train.batch_per_rank=64
grep -q "global batch 64 (16 per rank x 4 micro-batches" "$work/accumulated.out" \
  || { echo "FAIL: the start line does not count effective batches"; cat "$work/accumulated.out"; exit 1; }

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
        if v["dtype"] != "F32": continue
        s, e = v["data_offsets"]
        out[k] = struct.unpack("<%df" % ((e - s) // 4), b[base + s: base + e])
    return meta, out
ref_meta, ref = read("one_rank")
for name in ("accumulated", "two_ranks", "two_ranks_accumulated"):
    meta, got = read(name)
    assert (meta["step"], meta["images_seen"]) == ("16", "1024") == (ref_meta["step"], ref_meta["images_seen"]), meta
    worst, moved = 0.0, 0.0
    for k in ref:
        if k.startswith("optimizer."): continue
        scale = max(abs(t) for t in ref[k]) + 1e-12
        worst = max(worst, max(abs(x - y) for x, y in zip(ref[k], got[k])) / scale)
    assert worst < 1e-5, (name, worst)
    print(f"PASS: {name} ends with 1 rank x 64's weights (worst difference {worst:.2g} of each tensor's largest value)")
steps = [json.loads(l)["step"] for l in open(f"{work}/accumulated/metrics.jsonl") if '"kind":"step"' in l]
assert steps == list(range(1, 17)), steps
PY
[[ $? -eq 0 ]] || exit 1

# No collective before the last micro-batch: the timeline of 2 traced steps of 2 ranks x 3
# micro-batches shows, per step and rank, 3 forward and backward passes, 2 sums into the
# accumulator and one allreduce of LeNet's one bucket.
timeout 120 "$launch" --testing -np 2 "$ringtrain" bench "${common[@]}" --set data.source=synthetic \
  --set train.batch_per_rank=16 --set train.accumulate_steps=3 --set bench.windows=2 --set bench.steps_per_window=3 \
  --set bench.warmup_steps=1 --set log.timeline="$work/timeline.json" --set log.timeline_first_step=1 \
  --set log.timeline_steps=2 --set checkpoint.dir="$work/bench" > "$work/bench.out" 2>&1 \
  || { echo "FAIL: bench with a timeline"; cat "$work/bench.out"; exit 1; }
python3 - "$work/timeline.json" << 'PY'
import collections, json, sys
trace = json.load(open(sys.argv[1]))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
count = collections.Counter((e["name"], e["args"]["step"], e["pid"]) for e in events
                            if e.get("ph") == "X" and isinstance(e.get("args"), dict) and "step" in e["args"])
want = {"forward": 3, "backward": 3, "sum micro-batch gradients": 2, "allreduce": 1}
for step in (1, 2):
    for rank in (0, 1):
        got = {name: count[(name, step, rank)] for name in want}
        assert got == want, (step, rank, got)
print("PASS: per step and rank, 3 forward and backward passes, 2 sums and 1 allreduce")
PY
