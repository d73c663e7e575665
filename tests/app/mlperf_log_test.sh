#!/usr/bin/env bash
# MLPerf's log (Note [MLPerf's log] in app/run/mlperf_log.h) from a short LARS run of ResNet-50 at 2
# ranks with a target, read by mlperf_log_checker.py (MLPerf's closed ResNet rules, written from
# them): accepted, and the reference-point checker's reading says it converged at the epoch the run
# says it reached the target. The same log with a required key removed, or a rule-bound value
# changed, is refused. A run that cannot reach its target ends with status 3, run_stop says
# "aborted", and the reading says it did not converge.
# The data: two classes of 36x36 JPEG noise, dark and bright; 3 of each class's 32 validation
# images carry the other's brightness, so top-1 tops out at 90.6%, inside the rules' [0.759, 1).
# usage: mlperf_log_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
python=/usr/bin/python3
"$python" -c "import PIL" 2>/dev/null || { echo "SKIP: $python lacks PIL"; exit 77; }
work=$(mktemp -d /tmp/ringtrain_mlperf_log_XXXXXX)
trap 'rm -rf "$work"' EXIT
"$python" - "$work/data" <<'PY' || exit 1
import os, random, sys
from PIL import Image
random.seed(1)
for split, n in (("train", 96), ("val", 32)):
    for cls, other in (("dark", "bright"), ("bright", "dark")):
        d = os.path.join(sys.argv[1], split, cls)
        os.makedirs(d)
        for i in range(n):
            looks = other if split == "val" and i < 3 else cls
            lo, hi = (0, 110) if looks == "dark" else (145, 255)
            im = Image.new("RGB", (36, 36))
            im.putdata([tuple(random.randint(lo, hi) for _ in range(3)) for _ in range(36 * 36)])
            im.save(os.path.join(d, f"{i}.jpg"), quality=90)
PY
cat > "$work/run.toml" <<TOML
[model]
name = "resnet50"
num_classes = 2
[data]
source = "imagefolder"
dir = "$work/data"
image_size = 32
mean = [0.5, 0.5, 0.5]
std = [0.3, 0.3, 0.3]
random_crop = false
[train]
epochs = 8
batch_per_rank = 8
lr = 2.0
optimizer = "lars"
weight_decay = 5e-5
[schedule]
kind = "poly"
warmup_epochs = 1
end_lr = 0.0001
decay_steps = 60
[eval]
batch = 16
target_top1 = 0.759
[log]
mlperf = true
progress = "none"
[mlperf]
submission_org = "ringtrain's tests"
submission_platform = "a test machine"
TOML
launch() { "$src/scripts/mpi_launch.sh" --testing -np 2 "$ringtrain" --config "$work/run.toml" "$@"; }
checker() { "$python" "$src/tests/app/mlperf_log_checker.py" "$@"; }
fail=0

launch --set checkpoint.dir="$work/reach" > "$work/reach.out" 2>&1
status=$?
log=$work/reach/mlperf.log
reached=$(sed -n 's/^ringtrain: reached the target top-1 .* after epoch \([0-9]*\),.*/\1/p' "$work/reach.out")
if [[ $status -ne 0 || -z $reached || ! -s $log ]]; then
  echo "FAIL: the run should reach its target and exit 0 (status $status)"; tail -20 "$work/reach.out"; exit 1
fi
verdict=$(checker "$log")
if [[ $verdict == *"compliance: accepted"* && $verdict == *"rcp: converged at epoch $reached"* ]]; then
  echo "PASS: the log is accepted and converged at epoch $reached, where the run reached its target"
else
  echo "FAIL: the run reached its target after epoch $reached; the checker says:"; echo "$verdict"; fail=1
fi
grep -q '"kind":"target","target_top1":0.759,"reached":true,"epoch":'"$reached" "$work/reach/metrics.jsonl" ||
  { echo "FAIL: metrics.jsonl has no reached-target record at epoch $reached"; fail=1; }

# Each planted fault must be refused, naming the key.
refused() {  # NAME KEY SED-EXPRESSION
  sed "$3" "$log" > "$work/$1.log"
  verdict=$(checker "$work/$1.log")
  if [[ $verdict == *"compliance: refused"* && $verdict == *"$2"* ]]; then
    echo "PASS: $1 is refused: $(grep -m1 "$2" <<< "$verdict")"
  else
    echo "FAIL: $1 should be refused naming $2; the checker says:"; echo "$verdict"; fail=1
  fi
}
refused "without lars_epsilon" lars_epsilon '/"key":"lars_epsilon"/d'
refused "without run_stop" run_stop '/"key":"run_stop"/d'
refused "without submission_org" submission_org '/"key":"submission_org"/d'
refused "with an end rate of 0.001" lars_opt_end_learning_rate '/lars_opt_end_learning_rate/s/"value":0.0001/"value":0.001/'
refused "with run_start before init_stop" run_start '/"key":"init_stop"/d'
refused "with eval_accuracy lines without their epoch" eval_accuracy '/"key":"eval_accuracy"/s/,"epoch_num":[0-9]*//'

launch --set checkpoint.dir="$work/miss" --set eval.target_top1=0.99 --set train.epochs=2 > "$work/miss.out" 2>&1
status=$?
verdict=$(checker "$work/miss/mlperf.log")
if [[ $status -eq 3 && $verdict == *"rcp: not converged (run_stop status aborted)"* ]] &&
   grep -q '^ringtrain: did not reach the target top-1 99.00%' "$work/miss.out"; then
  echo "PASS: a run that misses its target exits 3 and its log does not converge"
else
  echo "FAIL: a run missing its target: status $status (want 3); the checker says:"; echo "$verdict"
  tail -5 "$work/miss.out"; fail=1
fi
exit $fail
