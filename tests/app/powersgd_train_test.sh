#!/usr/bin/env bash
# dist.compression = "powersgd" in training: 2 ranks of LeNet on a Fashion-MNIST subset, compressed
# from step 21, the replicas compared after every step (the job stops where they differ):
#   1. alone: it trains (test top-1 within 5 points of the plain run's) and ends with other weights
#      than the plain run (the compression was applied), the banner naming the compressed tensors,
#      metrics.jsonl counting the megabytes averaged (over 10 times fewer from step 21) and the error;
#   2. with bf16 on the wire, 2 micro-batches per step and clipping; over the two-level ring of
#      2 fake hosts x 2 ranks with LARS and fp16 on the wire; and simple_cnn with batch norm over
#      train.bn_group = 2: each trains, replicas identical every step;
#   3. a run that fails at step 45, resumed, ends bit-identical to the uninterrupted one (every
#      rank's own errors and Q's beside the checkpoint); resumed at 3 ranks it starts them afresh;
#   4. a fault on rank 1's communication thread between a compressed step's two averages ends
#      the job, its message first;
#   5. rank 1 on SSE4.1 beside rank 0 on the machine's best (AVX-512 or AVX2): replicas identical;
#   6. the timeline of a compressed step holds each compressed bucket's five phases (three
#      products, two averages) inside its allreduce span, on both ranks.
# usage: powersgd_train_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_powersgd_train_XXXXXX)
trap 'rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh  # Open MPI or MPICH, as configured

fashion_mnist_subset "$work/data" 4096 1000 || exit 1
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=2 --set train.threads=1
        --set train.batch_per_rank=32 --set log.progress=none "${subset_data[@]}"
        --set schedule.warmup_epochs=0 --set dist.check_replicas_every_steps=1)
powersgd=(--set dist.compression=powersgd --set dist.powersgd_start_step=20)
run() {  # run NAME [args...]
  local name=$1
  shift
  timeout 120 "$launch" --testing -np 2 "$ringtrain" "${common[@]}" --set checkpoint.dir="$work/$name" "$@" \
    > "$work/$name.out" 2>&1 || { echo "FAIL: run $name"; grep -v " = \|^#\|^\[\|^$" "$work/$name.out"; exit 1; }
}
run plain
run powersgd "${powersgd[@]}" --set checkpoint.every_steps=20 --set log.timeline="$work/trace.json" \
  --set log.timeline_first_step=22 --set log.timeline_steps=1
# Rank 1 fails at step 45 (after the saves at 20 and 40); --auto-resume goes on from step 40 with
# every rank's own errors and Q's, and ends with the uninterrupted run's weights, bit for bit.
RINGTRAIN_TEST_FAULT=1:step:45 timeout 120 "$launch" --testing -np 2 "$ringtrain" "${common[@]}" "${powersgd[@]}" \
  --set checkpoint.every_steps=20 --set checkpoint.dir="$work/resumed" > "$work/failed.out" 2>&1 &&
  { echo "FAIL: the run with a fault at step 45 did not fail"; exit 1; }
ls "$work/resumed"/checkpoint-*.rank{0,1}-of-2.safetensors > /dev/null ||
  { echo "FAIL: no rank's own file beside the checkpoint"; ls "$work/resumed"; exit 1; }
run resumed "${powersgd[@]}" --set checkpoint.every_steps=20 --auto-resume
grep -q "PowerSGD's errors and Q's start afresh" "$work/resumed.out" &&
  { echo "FAIL: the resume at the same rank count started afresh"; cat "$work/resumed.out"; exit 1; }
python3 "$src/tests/support/same_tensors.py" "$work/powersgd/checkpoint.safetensors" \
  "$work/resumed/checkpoint.safetensors" || { echo "FAIL: the resumed run did not end bit-identical"; exit 1; }
[[ $(ls "$work/resumed"/*.rank*-of-2.safetensors | wc -l) == 2 ]] ||
  { echo "FAIL: older checkpoints' rank files were kept: $(ls "$work/resumed")"; exit 1; }
echo "PASS: a resume after a failure at step 45 ended bit-identical to the uninterrupted run"
# At 3 ranks the 2 ranks' files do not fit: every rank starts afresh, and the resume says so.
cp -r "$work/powersgd" "$work/three"
timeout 120 "$launch" --testing -np 3 "$ringtrain" "${common[@]}" "${powersgd[@]}" --set train.epochs=3 \
  --set checkpoint.dir="$work/three" --auto-resume > "$work/three.out" 2>&1 || { echo "FAIL: run three"; exit 1; }
grep -q "PowerSGD's errors and Q's start afresh: 3 of 3 ranks have no file of their own" "$work/three.out" ||
  { echo "FAIL: the resume at 3 ranks does not say it starts afresh"; grep ringtrain: "$work/three.out"; exit 1; }
run composed "${powersgd[@]}" --set dist.wire=bf16 --set train.accumulate_steps=2 --set train.batch_per_rank=16 \
  --set train.clip_grad_norm=1
# 4 ranks take half the steps at twice the rate: compared with a plain run of the same settings.
for name in two_level_plain two_level; do
  args=(--set dist.hierarchy=two_level --set train.optimizer=lars --set dist.wire=fp16)
  [[ $name == two_level ]] && args+=("${powersgd[@]}")
  RINGTRAIN_FAKE_HOST_RANKS=2 timeout 120 "$launch" --testing -np 4 "$ringtrain" "${common[@]}" "${args[@]}" \
    --set checkpoint.dir="$work/$name" > "$work/$name.out" 2>&1 ||
    { echo "FAIL: run $name"; grep -v " = \|^#\|^\[\|^$" "$work/$name.out"; exit 1; }
done
grep -q "two-level ring (2 hosts x 2 ranks" "$work/two_level.out" ||
  { echo "FAIL: the two_level run did not use the two-level ring"; grep ringtrain: "$work/two_level.out"; exit 1; }
run bn_group_plain --set model.name=simple_cnn --set train.bn_group=2
run bn_group "${powersgd[@]}" --set model.name=simple_cnn --set train.bn_group=2
# Ranks whose CPUs differ: rank 1's oneDNN held to SSE4.1. Its gradients round otherwise (the run
# ends with other weights than the same run on one instruction set), and the replicas stay
# identical every step.
for name in isa_same isa_mixed; do
  wrap=()
  [[ $name == isa_mixed ]] && wrap=("$src/tests/support/sse41_on_rank1.sh")
  timeout 120 "$launch" --testing -np 2 "${wrap[@]}" "$ringtrain" "${common[@]}" "${powersgd[@]}" \
    --set model.name=simple_cnn --set train.epochs=1 --set checkpoint.dir="$work/$name" > "$work/$name.out" 2>&1 ||
    { echo "FAIL: run $name"; grep -v " = \|^#\|^\[\|^$" "$work/$name.out"; exit 1; }
done
python3 "$src/tests/support/same_tensors.py" "$work/isa_same/checkpoint.safetensors" \
  "$work/isa_mixed/checkpoint.safetensors" > /dev/null &&
  { echo "FAIL: SSE4.1 on rank 1 changed nothing: the mixed run checks nothing"; exit 1; }
echo "PASS: ranks on SSE4.1 and the machine's best instruction set kept identical replicas every step"
# A rank whose communication thread fails between a compressed step's two averages (rank 0 waits in
# the second) ends the job, its message first.
RINGTRAIN_TEST_FAULT=1:powersgd_rounds:25 timeout 60 "$launch" --testing -np 2 "$ringtrain" "${common[@]}" "${powersgd[@]}" \
  --set checkpoint.dir="$work/fault" > "$work/fault.out" 2>&1 && { echo "FAIL: the injected fault did not end the job"; exit 1; }
[[ $? -ne 124 ]] || { echo "FAIL: the job with a failed rank ran into the 60-s timeout"; exit 1; }
grep -m1 " error: " "$work/fault.out" | grep -q "rank 1 of 2 .* error: injected fault at powersgd_rounds on rank 1 at step 25" ||
  { echo "FAIL: rank 1's own message is not the first error"; grep " error: " "$work/fault.out"; exit 1; }
grep -q "PowerSGD (dist.compression) at rank 4 on 4 of 10 tensors from step 21: .*every rank applies the whole update" \
  "$work/powersgd.out" || { echo "FAIL: the banner does not describe the compression"; cat "$work/powersgd.out"; exit 1; }

python3 - "$work" "$src" << 'PY'
import json, re, subprocess, sys
work, src = sys.argv[1], sys.argv[2]
top1 = {n: float(re.search(r"^done: test top-1 ([0-9.]+)%", open(f"{work}/{n}.out").read(), re.M).group(1))
        for n in ("plain", "powersgd", "composed", "two_level_plain", "two_level", "bn_group_plain", "bn_group")}
print("test top-1:", top1)
for n in ("powersgd", "composed"):
    assert top1[n] > top1["plain"] - 5, (n, top1)
# Each against a plain run of its own settings; the plain runs themselves well above chance (10%).
assert top1["two_level"] > top1["two_level_plain"] - 5 and top1["two_level_plain"] > 25, top1
assert top1["bn_group"] > top1["bn_group_plain"] - 5 and top1["bn_group_plain"] > 60, top1
# The traced step (23): every allreduce span of a compressed bucket holds its five phases, in order.
events = [e for e in json.load(open(f"{work}/trace.json")) if e.get("ph") == "X"]
phases = ["P = M Q", "average P", "Q = M^T P", "average Q", "P Q^T"]
pids = {e["pid"] for e in events}
assert len(pids) == 2, f"rank rows in the trace: {pids}"
for pid in pids:
    mine = [e for e in events if e["pid"] == pid]
    allreduces = [e for e in mine if e["name"] == "allreduce"]
    assert allreduces, f"rank row {pid}: no allreduce in the traced step"
    for a in allreduces:  # LeNet's one bucket holds its compressed tensors
        bucket = a["args"]["bucket"]
        inside = sorted((e for e in mine if e["name"] in phases and e["args"]["bucket"] == bucket), key=lambda e: e["ts"])
        assert [e["name"] for e in inside] == phases, (pid, bucket, [e["name"] for e in inside])
        assert all(a["ts"] <= e["ts"] and e["ts"] + e["dur"] <= a["ts"] + a["dur"] + 1 for e in inside), (a, inside)
print(f"timeline: each compressed bucket's five phases inside its allreduce, on {len(pids)} ranks")
same = subprocess.run([sys.executable, f"{src}/tests/support/same_tensors.py", f"{work}/plain/checkpoint.safetensors",
                       f"{work}/powersgd/checkpoint.safetensors"], capture_output=True)
assert same.returncode != 0, "the compressed run ended with the plain run's weights"
# metrics.jsonl: the floats handed to the ring drop from step 21 on, and the error is counted from then.
records = [json.loads(l) for l in open(f"{work}/powersgd/metrics.jsonl") if '"kind":"step"' in l]
plain = [r for r in records if r["step"] <= 20]
compressed = [r for r in records if r["step"] > 20]
assert plain and compressed and all(r["powersgd_error"] == 0 for r in plain), plain
assert all(0 < r["powersgd_error"] < 10 for r in compressed), compressed[:3]
assert plain[0]["averaged_mb"] > 10 * compressed[0]["averaged_mb"] > 0, (plain[0], compressed[0])
print(f"averaged per step: {plain[0]['averaged_mb']} MB plain, {compressed[0]['averaged_mb']} MB compressed; "
      f"error's relative norm {compressed[0]['powersgd_error']:.3f} at step 21, {compressed[-1]['powersgd_error']:.3f} at the end")
print("PASS: PowerSGD trained within 5 points of plain, alone and composed, replicas identical every step")
PY
