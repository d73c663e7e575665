#!/usr/bin/env bash
# dist.autotune (Note [Online bucket tuning]) on 4 ranks of LeNet, the config's buckets small
# enough that another plan exists, the replica check after every step across the tuning:
# - the tuned run says what it chose, writes tuned.toml and metrics.jsonl's records, and saves the
#   choice in its checkpoints;
# - tuned.toml as written (dist.autotune = "replay") repeats the run bit for bit, also resumed
#   from a checkpoint saved mid-tuning;
# - the tuned run resumed after it settled, with the first run's own config, does not tune again
#   and ends bit-identical to the uninterrupted run;
# - resumed while tuning, it tunes again, and its tuned.toml (both parts' trials) replays it;
# - the chosen caps from the first step (dist.autotune = "off") end elsewhere: at 4 ranks the
#   buckets move bits, so the comparisons above can fail.
# usage: autotune_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_autotune_XXXXXX)
trap 'pkill -9 -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh
fashion_mnist_subset "$work/data" 2048 256 || exit 1
# 32 steps an epoch; the tuning ends by step 2 + 8 + 2 candidates x 2 rounds x 16 = 74.
common=(--set model.name=lenet --set train.epochs=5 --set train.threads=1 --set train.batch_per_rank=16
        --set log.progress=none --set checkpoint.keep=0 --set dist.check_replicas_every_steps=1)
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run NAME CONFIG [args...]
  local name=$1 config=$2
  shift 2
  timeout 180 "$launch" --testing -np 4 "$ringtrain" --config "$config" --set checkpoint.dir="$work/$name" "$@" \
    > "$work/$name.out" 2>&1 || { cat "$work/$name.out"; fail "$name: exit $?"; }
}
same() { python3 "$src/tests/support/same_tensors.py" "$1" "$2"; }
epoch_file() { python3 -c "print(f'checkpoint-{$1 * 32 * 64:012d}.safetensors')"; }

run tuned "$src/configs/fashion_mnist.toml" "${common[@]}" "${subset_data[@]}" --set dist.autotune='"on"' \
  --set dist.bucket_mb=0.02 --set dist.first_bucket_mb=0.01
grep -q "ringtrain: dist.autotune: 8 steps at the config's 0.02/0.01 MiB" "$work/tuned.out" ||
  { cat "$work/tuned.out"; fail "no line of the tuner's plan"; }
grep -Eq "ringtrain: dist.autotune (settled on|kept the config's) dist.bucket_mb = " "$work/tuned.out" ||
  { cat "$work/tuned.out"; fail "no line of the tuner's choice"; }
[[ -f $work/tuned/tuned.toml ]] || fail "no tuned.toml in $(ls "$work/tuned")"
python3 - "$work/tuned" << 'PY' || fail "the tuner's records, trials or checkpoints are wrong"
import json, re, struct, sys
run = sys.argv[1]
records = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
cands = [r for r in records if r["kind"] == "autotune_candidate"]
final = [r for r in records if r["kind"] == "autotune"]
assert len(cands) == 2 and len(final) == 1, (cands, final)
assert (cands[0]["bucket_mb"], cands[0]["first_bucket_mb"]) == (0.02, 0.01), cands[0]
f = final[0]
assert all(c["measured_s"] > 0 and c["steps"] >= 6 for c in cands), cands
chosen = (f["bucket_mb"], f["first_bucket_mb"])
assert chosen in [(c["bucket_mb"], c["first_bucket_mb"]) for c in cands], f
assert f["tuning_steps"] == f["step"] and f["step"] < 4 * 32, f
text = open(f"{run}/tuned.toml").read()
trials = re.search(r'^autotune_trials = "([^"]*)"', text, re.M).group(1).split()
assert re.search(r'^autotune = "replay"', text, re.M), "tuned.toml does not replay"
assert trials[0] == "0:0.02/0.01" and trials[-1] == f"{f['step']}:{chosen[0]:g}/{chosen[1]:g}", (trials, f)
assert re.search(rf'^bucket_mb = {chosen[0]:g}\b', text, re.M), "tuned.toml does not hold the choice"
def meta(path):
    b = open(path, "rb").read()
    return json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])["__metadata__"]
assert "tuned_buckets" not in meta(f"{run}/checkpoint-{32 * 64:012d}.safetensors"), "saved mid-tuning as settled"
assert meta(f"{run}/checkpoint-{4 * 32 * 64:012d}.safetensors")["tuned_buckets"] == f"{chosen[0]:g}/{chosen[1]:g}"
print(f"tuned: {len(trials)} trial entries, settled at step {f['step']} on {chosen}")
PY

# The written file, as it is.
run replayed "$work/tuned/tuned.toml"
same "$work/tuned/checkpoint.safetensors" "$work/replayed/checkpoint.safetensors" ||
  fail "tuned.toml's replay ends elsewhere than the tuned run"
# Resumed after epoch 1, inside the tuning, replaying.
mkdir "$work/replay_resumed" && cp "$work/replayed/$(epoch_file 1)" "$work/replay_resumed/"
run replay_resumed "$work/tuned/tuned.toml" --resume "$work/replay_resumed"
same "$work/tuned/checkpoint.safetensors" "$work/replay_resumed/checkpoint.safetensors" ||
  fail "the replay resumed mid-tuning ends elsewhere than the tuned run"
# The tuned run resumed after epoch 4, past its choice, with the first run's own config.
mkdir "$work/resumed" && cp "$work/tuned/$(epoch_file 4)" "$work/resumed/"
run resumed "$src/configs/fashion_mnist.toml" "${common[@]}" "${subset_data[@]}" --set dist.autotune='"on"' \
  --set dist.bucket_mb=0.02 --set dist.first_bucket_mb=0.01 --resume "$work/resumed"
grep -q "ringtrain: dist.autotune" "$work/resumed.out" && { cat "$work/resumed.out"; fail "the resumed run tuned again"; }
same "$work/tuned/checkpoint.safetensors" "$work/resumed/checkpoint.safetensors" ||
  fail "the tuned run resumed after settling ends elsewhere than the uninterrupted run"
grep -q "ringtrain: the checkpoint's tuned buckets apply: dist.bucket_mb = " "$work/resumed.out" ||
  { cat "$work/resumed.out"; fail "the resumed run does not say it took the checkpoint's caps"; }
# Resumed with tuning off: the config's caps, said so.
mkdir "$work/resumed_off" && cp "$work/tuned/$(epoch_file 4)" "$work/resumed_off/"
run resumed_off "$src/configs/fashion_mnist.toml" "${common[@]}" "${subset_data[@]}" --set dist.autotune='"off"' \
  --set dist.bucket_mb=0.02 --set dist.first_bucket_mb=0.01 --resume "$work/resumed_off"
grep -q "tuned buckets (.*) are set aside: dist.autotune = \"off\"" "$work/resumed_off.out" ||
  { cat "$work/resumed_off.out"; fail "a resume with dist.autotune = off did not set the tuned caps aside"; }
# Stopped while tuning (the checkpoint after epoch 1, step 32) and resumed live: it tunes again from
# the config's caps, and its tuned.toml, carrying the first part's trials, replays the whole run.
mkdir "$work/retuned" && cp "$work/tuned/$(epoch_file 1)" "$work/retuned/"
run retuned "$src/configs/fashion_mnist.toml" "${common[@]}" "${subset_data[@]}" --set dist.autotune='"on"' \
  --set dist.bucket_mb=0.02 --set dist.first_bucket_mb=0.01 --resume "$work/retuned"
grep -q "ringtrain: dist.autotune: 8 steps at the config's 0.02/0.01 MiB" "$work/retuned.out" ||
  { cat "$work/retuned.out"; fail "the run resumed mid-tuning did not tune again"; }
python3 - "$work" << 'PY' || fail "the resumed run's trials do not carry the first part's"
import re, sys
def trials(run):
    text = open(f"{sys.argv[1]}/{run}/tuned.toml").read()
    return re.search(r'^autotune_trials = "([^"]*)"', text, re.M).group(1).split()
first, again = trials("tuned"), trials("retuned")
before = [t for t in first if int(t.split(":")[0]) < 32]
assert again[:len(before)] == before, (before, again)
# From step 32 the config's caps: a new entry, or the last one before it already says so.
at_32 = again[len(before)] if again[len(before)].startswith("32:") else before[-1]
assert at_32.endswith(":0.02/0.01") and len(again) > len(before) + 1, (before, again)
PY
run retuned_replayed "$work/retuned/tuned.toml"
same "$work/retuned/checkpoint.safetensors" "$work/retuned_replayed/checkpoint.safetensors" ||
  fail "the tuned.toml of a run resumed mid-tuning does not replay it"
# The choice alone, from the first step: other bits, or the comparisons above prove nothing.
run fixed "$work/tuned/tuned.toml" --set dist.autotune='"off"'
same "$work/tuned/checkpoint.safetensors" "$work/fixed/checkpoint.safetensors" > /dev/null &&
  fail "the choice from the first step ends bit-identical to the tuned run: the buckets move no bit here"
echo "PASS: tuned across changes with identical replicas; tuned.toml replays it bit for bit, from the start and" \
  "resumed mid-tuning; resumed after settling it keeps the choice, bit for bit; resumed while tuning it tunes" \
  "again and its tuned.toml replays both parts"
