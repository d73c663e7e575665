#!/usr/bin/env bash
# Behaviour unchanged by a change that should change none: the same three runs with two ringtrain
# binaries (before and after), every checkpoint tensor compared bit for bit and every metric record
# compared with its timings removed. The runs, on a Fashion-MNIST subset:
#   lenet_signal   LeNet at 2 ranks, SIGUSR1 to rank 1 mid-run (save, exit 75), then --auto-resume
#   mini_accum     resnet_mini at 2 ranks, 2 micro-batches a step, gradients clipped to norm 1
#   two_level      LeNet at 4 ranks as 2 fake hosts x 2 ranks (the two-level ring)
#   lars_sharded   resnet_mini at 2 ranks with LARS, each rank updating its own part (its norms summed
#                  across ranks)
#   shards         LeNet at 2 ranks from tar shards that `ringtrain pack` (of AFTER) wrote
#   stragglers     LeNet at 4 ranks, 40 ms added to rank 2's every step, SIGUSR2 to rank 1 mid-run:
#                  the epochs' reports name rank 2 and the report on demand is printed (its figures
#                  are timings: what is compared is who is named, and that the report came)
#   mlperf         ResNet-50 at 2 ranks with MLPerf's log and a target it does not reach: the log's
#                  events, keys, values and epochs (not their times, nor the file and line that
#                  logged them)
#   powersgd       LeNet at 2 ranks with PowerSGD from step 5, one epoch, then --auto-resume to two:
#                  every rank's own file (errors and Q's) compared too
#   replay         LeNet at 2 ranks repeating a tuning's trials (dist.autotune = "replay"), one
#                  epoch, then --auto-resume to two
#   lars_resume    resnet_mini at 2 ranks with LARS and the sharded update, one epoch, then
#                  --auto-resume to two
# Each checkpoint's metadata is compared too, but for the run's seconds and the resolved config's
# bucket caps (a tuned run's are in the metadata of their own).
# usage: same_behaviour.sh BEFORE AFTER [WORK]      (prints one line per run; exit 1 on a difference)
set -u
before=$1 after=$2
for bin in "$before" "$after"; do [[ -x $bin ]] || { echo "same_behaviour: $bin: not an executable" >&2; exit 2; }; done
src=$(cd "$(dirname "$0")/.." && pwd)
work=${3:-$(mktemp -d /tmp/ringtrain_same_XXXXXX)}
source "$src/tests/support/fashion_mnist.sh"
have_fashion_mnist || { echo "Fashion-MNIST is not installed in $fashion_mnist" >&2; exit 2; }
launch=$src/scripts/mpi_launch.sh
[[ -d $work/data ]] || fashion_mnist_subset "$work/data" 8192 1024 || exit 2
[[ -d $work/folders ]] || fashion_mnist_folders "$work/folders" 600 || exit 2
[[ -d $work/shards ]] || "$after" pack --from "$work/folders" --to "$work/shards" --shard-mb 0.1 > /dev/null || exit 2
subset_data_args "$work/data"
common=(--config "$src/configs/fashion_mnist.toml" --set train.threads=1 --set log.progress=none
        --set log.every_steps=1 "${subset_data[@]}")
fail() { echo "FAIL: $*"; exit 1; }

# run WHICH NAME NP [args...]: one job of binary WHICH (before|after) into $work/WHICH/NAME
run() {
  local which=$1 name=$2 np=$3 bin
  shift 3
  bin=$before && [[ $which == after ]] && bin=$after
  timeout 600 "$launch" --testing -np "$np" "$bin" "${common[@]}" --set checkpoint.dir="$work/$which/$name" "$@" \
    >> "$work/$which/$name.out" 2>&1
}
# The pid of rank 1 of the job writing into DIR.
rank1_pid() {
  local p
  for p in $(pgrep -f "checkpoint.dir=$1"); do
    tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -Eqx "(OMPI_COMM_WORLD_RANK|PMI_RANK)=1" && { echo "$p"; return; }
  done
}
lenet_signal() {  # SIGUSR1 to rank 1 once 40 steps are logged, then the resume
  local which=$1 dir=$work/$1/lenet_signal
  run "$which" lenet_signal 2 --set model.name=lenet --set train.epochs=2 --set train.batch_per_rank=32 &
  local job=$! pid
  until [[ -f $dir/metrics.jsonl ]] && (($(grep -c '"kind":"step"' "$dir/metrics.jsonl") >= 40)); do sleep 0.01; done
  pid=$(rank1_pid "$dir")
  kill -USR1 "$pid"
  wait "$job"
  [[ $? -eq 75 ]] || fail "$which lenet_signal: expected exit 75 after SIGUSR1"
  run "$which" lenet_signal 2 --set model.name=lenet --set train.epochs=2 --set train.batch_per_rank=32 \
    --auto-resume || fail "$which lenet_signal: the resume"
}
mini_accum() {
  run "$1" mini_accum 2 --set model.name=resnet_mini --set train.epochs=1 --set train.batch_per_rank=16 \
    --set train.accumulate_steps=2 --set train.clip_grad_norm=1.0 || fail "$1 mini_accum"
}
two_level() {
  RINGTRAIN_FAKE_HOST_RANKS=2 run "$1" two_level 4 --set model.name=lenet --set train.epochs=1 \
    --set train.batch_per_rank=32 --set dist.hierarchy=two_level || fail "$1 two_level"
}
lars_sharded() {
  run "$1" lars_sharded 2 --set model.name=resnet_mini --set train.epochs=1 --set train.batch_per_rank=32 \
    --set train.optimizer=lars --set dist.sharded_update=true || fail "$1 lars_sharded"
}
stragglers() {  # SIGUSR2 to rank 1 once 10 steps are logged
  local which=$1 dir=$work/$1/stragglers
  RINGTRAIN_TEST_FAULT=2:slow_step run "$which" stragglers 4 --set model.name=lenet --set train.epochs=2 \
    --set train.batch_per_rank=64 &
  local job=$!
  until [[ -f $dir/metrics.jsonl ]] && (($(grep -c '"kind":"step"' "$dir/metrics.jsonl") >= 10)); do sleep 0.01; done
  kill -USR2 "$(rank1_pid "$dir")"
  wait "$job" || fail "$which stragglers"
}
mlperf() {  # a target out of reach: the run ends with status 3 (kExitTargetMissed)
  run "$1" mlperf 2 --set model.name=resnet50 --set model.num_classes=10 --set data.source=imagefolder \
    --set data.dir="$work/folders" --set data.channels=1 --set data.image_size=28 --set data.mean=[0.5] \
    --set data.std=[0.3] --set train.epochs=2 --set train.batch_per_rank=8 --set eval.batch=50 \
    --set eval.target_top1=0.99 --set schedule.kind=poly --set schedule.warmup_epochs=1 \
    --set log.mlperf=true --set mlperf.submission_org=ringtrain --set mlperf.submission_platform=a-2-core-vm
  [[ $? -eq 3 ]] || fail "$1 mlperf: expected exit 3 (target missed)"
}
# NAME SETTINGS...: one epoch, then a resume to the second.
resumed() {
  local which=$1 name=$2
  shift 2
  run "$which" "$name" 2 --set train.epochs=1 "$@" || fail "$which $name: the first epoch"
  run "$which" "$name" 2 --set train.epochs=2 "$@" --auto-resume || fail "$which $name: the resume"
}
powersgd() {
  resumed "$1" powersgd --set model.name=lenet --set train.batch_per_rank=32 --set dist.compression=powersgd \
    --set dist.powersgd_rank=2 --set dist.powersgd_start_step=5
}
replay() {
  resumed "$1" replay --set model.name=lenet --set train.batch_per_rank=32 --set dist.autotune=replay \
    --set 'dist.autotune_trials="0:25/1 20:0.05/0.01 150:0.2/0.05"'
}
lars_resume() {
  resumed "$1" lars_resume --set model.name=resnet_mini --set train.batch_per_rank=32 --set train.optimizer=lars \
    --set dist.sharded_update=true
}
shards() {
  run "$1" shards 2 --set model.name=lenet --set train.epochs=1 --set train.batch_per_rank=16 --set data.source=shards \
    --set data.dir="$work/shards" --set data.channels=1 --set data.image_size=28 || fail "$1 shards"
}

for which in before after; do
  rm -rf "${work:?}/$which" && mkdir -p "$work/$which"
  lenet_signal "$which"
  mini_accum "$which"
  two_level "$which"
  lars_sharded "$which"
  shards "$which"
  stragglers "$which"
  mlperf "$which"
  powersgd "$which"
  replay "$which"
  lars_resume "$which"
done
# The metadata of a checkpoint, but for the run's seconds (a timing) and its folder, one key a line.
metadata() { python3 -c '
import json, re, struct, sys
b = open(sys.argv[1], "rb").read()
m = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]]).get("__metadata__", {})
m.pop("run_seconds", None)
m["config"] = re.sub(" +", " ", m.get("config", "").replace("/before/", "/after/"))  # the runs'"'"' own folders
# The caps in force are tuned_buckets'"'"' and bucket_trials'"'"'; the config once carried them too.
m["config"] = re.sub("\\n(first_)?bucket_mb = [^\\n]*", "", m["config"])
print(json.dumps(m, sort_keys=True, indent=0))' "$1"; }
for name in lenet_signal mini_accum two_level lars_sharded shards stragglers mlperf powersgd replay lars_resume; do
  a=$work/before/$name b=$work/after/$name
  python3 "$src/tests/support/same_tensors.py" "$a/checkpoint.safetensors" "$b/checkpoint.safetensors" ||
    fail "$name: the checkpoints differ"
  cmp -s <(metadata "$(readlink -f "$a/checkpoint.safetensors")") <(metadata "$(readlink -f "$b/checkpoint.safetensors")") ||
    fail "$name: the checkpoints' metadata differ: $(diff <(metadata "$(readlink -f "$a/checkpoint.safetensors")") \
      <(metadata "$(readlink -f "$b/checkpoint.safetensors")") | head -n 6)"
  for own in "$a"/checkpoint-*.rank*-of-*.safetensors; do
    [[ -e $own ]] || continue
    python3 "$src/tests/support/same_tensors.py" "$own" "$b/${own##*/}" || fail "$name: ${own##*/} differs"
  done
  # Metric records without their timings: every loss, rate, norm and test figure. The straggler
  # figures are timings too; where a straggler is named, who it is is kept. An epoch's mean train
  # loss is summed over ranks where the signal's save fell, a step that differs from run to run: it
  # is compared to 12 digits, all else exactly.
  strip() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    named = r.get("straggler", "").split(" computed")[0]
    for k in ("images_per_s", "epoch_seconds", "data_wait", "compute_ms_median", "compute_ms_worst", "worst_rank",
              "worst_link", "worst_link_ratio", "worst_link_ms", "straggler", "run_seconds"): r.pop(k, None)
    if named: r["straggler"] = named
    if r["kind"] == "epoch": r["train_loss"] = "%.12g" % r["train_loss"]
    print(json.dumps(r, sort_keys=True))' "$1/metrics.jsonl"; }
  cmp -s <(strip "$a") <(strip "$b") || fail "$name: the metric records differ"
  if [[ $name == stragglers ]]; then
    for d in "$a" "$b"; do
      grep -q "^ringtrain: on SIGUSR2, at step " "$d.out" || fail "stragglers: no report on SIGUSR2 in $d.out"
      [[ $(grep -c "^ringtrain: rank 2 (.*) computed" "$d.out") -eq 2 ]] || fail "stragglers: rank 2 not named twice in $d.out"
    done
  fi
  # MLPerf's log: each line's event, key, value and metadata, without its time and the source line.
  mllog() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l.split(":::MLLOG ", 1)[1])
    for k in ("time_ms", "namespace"): r.pop(k, None)
    for k in ("file", "lineno"): r.get("metadata", {}).pop(k, None)
    print(json.dumps(r, sort_keys=True))' "$1/mlperf.log"; }
  if [[ $name == mlperf ]]; then
    cmp -s <(mllog "$a") <(mllog "$b") || fail "mlperf: the MLPerf logs differ"
  fi
  echo "same: $name ($(python3 -c 'import json,struct,sys; b=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",b[:8])[0]; print(len(json.loads(b[8:8+n]))-1)' "$a/checkpoint.safetensors") tensors bit for bit, $(wc -l < "$a/metrics.jsonl") metric records)"
done
