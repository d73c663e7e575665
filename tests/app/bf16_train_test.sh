#!/usr/bin/env bash
# train.precision = "bf16" on the CPU (Note [CPU bfloat16] in nn/cpu_bf16.h), end to end on a
# Fashion-MNIST subset with simple_cnn (batch norm), through oneDNN's emulation where the CPU has
# no bfloat16 units (train.bf16_emulation = true):
# - on AVX2 (ONEDNN_MAX_CPU_ISA=AVX2 stands in for such a CPU), where oneDNN 2.6 has no bf16,
#   the job is refused at start with a sentence naming the instruction set, emulation or not; on
#   AVX-512 without bf16 units (ONEDNN_MAX_CPU_ISA=AVX512_CORE), without the emulation asked for,
#   with a sentence naming the key; neither writes anything;
# - 2 ranks with group batch norm, accumulation and the replica check every step: a run resumed
#   mid-epoch ends with every tensor bit-identical to the uninterrupted run's; the weights in the
#   checkpoint are float32 master weights (most are not bf16 values); the loss falls;
# - the bf16 checkpoint evaluates in float32 (train.precision = "fp32") to about its own top-1;
# - PowerSGD with the bf16 wire on bf16 activations trains.
# Skipped (exit 77) after the refusals where oneDNN runs below AVX-512.
# usage: bf16_train_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_bf16_XXXXXX)
trap 'pkill -9 -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh
fashion_mnist_subset "$work/data" 1024 256 || exit 1
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=simple_cnn --set train.epochs=2
        --set train.threads=1 --set data.workers=1 --set train.batch_per_rank=16 --set train.accumulate_steps=2
        --set train.lr_per_256=0.2 --set train.precision=bf16 --set train.bf16_emulation=true
        --set log.progress=none "${subset_data[@]}")
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run NAME NP [args...]
  local name=$1 np=$2
  shift 2
  local rc=0
  timeout 200 "$launch" --testing -np "$np" "$ringtrain" train "${common[@]}" "$@" > "$work/$name.out" 2>&1 || rc=$?
  if [[ $rc -ne 0 ]] && grep -q "has no bf16 at all" "$work/$name.out"; then
    echo "SKIP: $(grep -o 'oneDNN runs this one.s [a-z0-9_]* instructions' "$work/$name.out" | head -1): no bf16 below AVX-512"
    exit 77
  fi
  [[ $rc -eq 0 ]] || { cat "$work/$name.out"; fail "$name: exit $rc"; }
}

# refused ISA EMULATION PATTERN: the job is refused at start with ONEDNN_MAX_CPU_ISA=ISA, saying
# PATTERN, and writes nothing.
refused() {
  local isa=$1 emulation=$2 pattern=$3 dir=$work/refused_$1
  ONEDNN_MAX_CPU_ISA=$isa timeout 60 "$ringtrain" train "${common[@]}" --set train.bf16_emulation="$emulation" \
    --set checkpoint.dir="$dir" > "$dir.out" 2>&1 && { cat "$dir.out"; fail "bf16 ran on $isa"; }
  grep -q "$pattern" "$dir.out" || { cat "$dir.out"; fail "on $isa, no sentence saying: $pattern"; }
  [[ ! -e $dir ]] || fail "the job refused on $isa wrote $(ls "$dir")"
  echo "PASS: refused on $isa: $(grep -o 'train.precision = "bf16" needs.*' "$dir.out" | head -1)"
}
refused AVX2 true 'needs a CPU with bfloat16 units.*runs this one.s avx2 instructions.*has no bf16 at all'
if grep -qw avx512bw /proc/cpuinfo; then
  refused AVX512_CORE false 'runs this one.s avx512_core instructions.*emulate.*train.bf16_emulation = true'
fi

bn=(--set train.bn_group=2 --set dist.check_replicas_every_steps=1)
run whole 2 "${bn[@]}" --set checkpoint.dir="$work/whole"
grep -q "in bf16" "$work/whole.out" || { cat "$work/whole.out"; fail "the banner does not say bf16"; }
run saving 2 "${bn[@]}" --set checkpoint.dir="$work/saving" --set checkpoint.every_steps=5 --set checkpoint.keep=0
# Step 10 of 16 per epoch: inside the first.
mid=$(python3 -c 'print(f"checkpoint-{10 * 64:012d}.safetensors")')
[[ -f $work/saving/$mid ]] || fail "no $mid among: $(ls "$work/saving")"
mkdir "$work/resumed" && cp "$work/saving/$mid" "$work/resumed/"
run resumed 2 "${bn[@]}" --set checkpoint.dir="$work/resumed" --resume "$work/resumed"
grep -q "resumed from .*inside epoch 1" "$work/resumed.out" || { cat "$work/resumed.out"; fail "not resumed mid-epoch"; }
python3 "$src/tests/support/same_tensors.py" "$work/whole/checkpoint.safetensors" "$work/resumed/checkpoint.safetensors" ||
  fail "the resumed bf16 run's checkpoint differs from the uninterrupted run's"
echo "PASS: a bf16 run on 2 ranks (group batch norm, accumulation, replica check) resumed mid-epoch is bit-identical"

python3 - "$work/whole/checkpoint.safetensors" "$work/whole/metrics.jsonl" << 'PY' || fail "master weights or training"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
head = {k: v for k, v in json.loads(b[8:8 + n]).items() if k != "__metadata__"}
weights = [k for k in head if k.endswith(".weight") and not k.startswith("optimizer")]
assert weights, list(head)[:5]
for k in weights:
    assert head[k]["dtype"] == "F32", (k, head[k]["dtype"])
# A bf16 value is a float32 whose low 16 bits are zero: master weights rarely are.
low = total = 0
for k in weights:
    o, e = head[k]["data_offsets"]
    words = struct.unpack("<%dI" % ((e - o) // 4), b[8 + n + o:8 + n + e])
    low += sum(1 for w in words if w & 0xFFFF)
    total += len(words)
assert low > 0.9 * total, f"only {low} of {total} weights are not bf16 values: bf16 master weights?"
epochs = [r for r in map(json.loads, open(sys.argv[2])) if r["kind"] == "epoch"]
assert len(epochs) == 2 and epochs[1]["train_loss"] < epochs[0]["train_loss"], epochs
assert epochs[1]["test_top1"] > 0.6, epochs
print(f"PASS: {low} of {total} weights are not bf16 values (float32 master weights); epoch losses "
      f"{epochs[0]['train_loss']:.3f}, {epochs[1]['train_loss']:.3f}, test top-1 {epochs[1]['test_top1']:.3f}")
PY

# The bf16 checkpoint in float32: its top-1 within a few points of what bf16 evaluation gave.
timeout 120 "$ringtrain" eval "${common[@]}" --set train.precision=fp32 --set checkpoint.dir="$work/whole" \
  > "$work/eval.out" 2>&1 || { cat "$work/eval.out"; fail "evaluating the bf16 checkpoint in float32: exit $?"; }
python3 - "$work/eval.out" "$work/whole/metrics.jsonl" << 'PY' || fail "float32 evaluation"
import json, re, sys
said = open(sys.argv[1]).read()
m = re.search(r"top-1 ([0-9.]+)", said)
assert m, said[-500:]
f32 = float(m.group(1))
f32 = f32 / 100 if f32 > 1 else f32
bf16 = [r for r in map(json.loads, open(sys.argv[2])) if r["kind"] == "epoch"][-1]["test_top1"]
assert abs(f32 - bf16) < 0.05, (f32, bf16)
print(f"PASS: the bf16 checkpoint evaluates in float32: top-1 {f32:.3f} (bf16: {bf16:.3f})")
PY

run powersgd 2 --set train.epochs=1 --set dist.compression=powersgd --set dist.powersgd_rank=2 \
  --set dist.powersgd_min_ratio=1 --set dist.wire=bf16 --set checkpoint.dir="$work/powersgd"
grep -q "PowerSGD" "$work/powersgd.out" || { cat "$work/powersgd.out"; fail "PowerSGD was not on"; }
python3 - "$work/powersgd/metrics.jsonl" << 'PY' || fail "PowerSGD on bf16 did not train"
import json, sys
epochs = [r for r in map(json.loads, open(sys.argv[1])) if r["kind"] == "epoch"]
assert len(epochs) == 1 and epochs[0]["test_top1"] > 0.6, epochs
print(f"PASS: PowerSGD with the bf16 wire trains bf16 activations: test top-1 {epochs[0]['test_top1']:.3f}")
PY
