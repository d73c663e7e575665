#!/usr/bin/env bash
# Note [Replica check] in training: LeNet on Fashion-MNIST under mpirun.
# - Clipping with one thread on rank 0 and two on rank 1 (a launcher wrapper sets train.threads by
#   rank): the replicas stay identical, checked after every step, while the clip factor is active.
# - One bit of one parameter flipped on one rank (RINGTRAIN_TEST_FAULT=R:flip_parameter_bit:STEP)
#   at 2 and 4 ranks, flat and two-level: the job stops at the next check, within seconds, naming
#   the step and that rank (at 2 ranks, both: no majority says which is right); with checks only
#   before saves, the save stops and the last good checkpoint stands.
# usage: replica_check_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_replicas_XXXXXX)
trap 'pkill -9 -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh
fashion_mnist_subset "$work/data" 2048 256 || exit 1
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=1
        --set train.batch_per_rank=32 --set log.progress=none "${subset_data[@]}")
fail() { echo "FAIL: $*"; exit 1; }

# The launcher starts one program for all ranks; this gives each its own thread count.
cat > "$work/threads_by_rank.sh" <<'WRAP'
#!/usr/bin/env bash
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
exec "$@" --set train.threads=$((rank + 1))
WRAP
chmod +x "$work/threads_by_rank.sh"
timeout 120 "$launch" --testing -np 2 "$work/threads_by_rank.sh" "$ringtrain" "${common[@]}" \
  --set train.clip_grad_norm=0.5 --set dist.check_replicas_every_steps=1 --set checkpoint.dir="$work/clip" \
  > "$work/clip.out" 2>&1 || { cat "$work/clip.out"; fail "clipping with 1 and 2 threads: the run failed"; }
clipped=$(python3 -c '
import json, sys
norms = [r["grad_norm"] for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "step"]
print(sum(n > 0.5 for n in norms), len(norms))' "$work/clip/metrics.jsonl") || fail "no metrics in $work/clip"
read -r over steps <<< "$clipped"
((over > 0)) || fail "the clip factor was never active ($over of $steps steps over the limit)"
echo "PASS: clipping at 1 and 2 threads: replicas identical after each of the 32 steps ($over clipped)"

# flip NAME NP FAKE_HOST_RANKS FLIP_RANK FLIP_STEP EXPECTED_TEXT settings...: the job must end
# within seconds of the check, with a non-zero exit and EXPECTED_TEXT in its output.
flip() {
  local name=$1 np=$2 fake=$3 rank=$4 step=$5 expect=$6
  shift 6
  local start=$SECONDS
  RINGTRAIN_TEST_FAULT=$rank:flip_parameter_bit:$step RINGTRAIN_FAKE_HOST_RANKS=$fake \
    timeout 120 "$launch" --testing --env RINGTRAIN_TEST_FAULT --env RINGTRAIN_FAKE_HOST_RANKS -np "$np" \
    "$ringtrain" "${common[@]}" --set train.threads=1 --set checkpoint.dir="$work/$name" "$@" > "$work/$name.out" 2>&1
  local rc=$?
  ((rc != 0 && rc != 124)) || { cat "$work/$name.out"; fail "$name: exit $rc, expected the job to stop"; }
  grep -qF "$expect" "$work/$name.out" || { cat "$work/$name.out"; fail "$name: no '$expect'"; }
  ! grep -q '"step": *1[1-9]' "$work/$name/metrics.jsonl" 2>/dev/null || fail "$name: steps after the check ran"
  echo "PASS: $name: stopped after $((SECONDS - start)) s: $(grep -m1 -o "the ranks' models differ[^.]*" "$work/$name.out")"
}
every=(--set dist.check_replicas_every_steps=5)
flip flat_np4 4 4 2 6 "after step 10: rank 2 (" "${every[@]}" --set dist.sharded_update=false
flip two_level_np4 4 2 1 6 "after step 10: rank 1 (" "${every[@]}" --set dist.sharded_update=false \
  --set dist.hierarchy=two_level
flip flat_np2 2 2 1 6 "after step 10: the ranks hold 2 different models and no majority says which is right: rank 0 (" \
  "${every[@]}" --set dist.sharded_update=false
flip two_level_np2 2 1 0 6 "after step 10: the ranks hold 2 different models" "${every[@]}" \
  --set dist.sharded_update=false --set dist.hierarchy=two_level
# The sharded update's all-gather gives each rank its shares' owners' parameters every step, so
# a flip is seen by the check that follows it before the next all-gather.
flip sharded_np4 4 4 3 9 "after step 10: rank 3 (" "${every[@]}"

# Checks before saves only: the save after step 10 stops before writing; step 5's stands.
flip save_np4 4 4 2 6 "before the save after step 10: rank 2 (" --set dist.check_replicas_every_steps=0 \
  --set checkpoint.every_steps=5 --set checkpoint.keep=3 --set dist.sharded_update=false
saved=$(python3 -c '
import json, struct, sys
b = open(sys.argv[1], "rb").read()
print(json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])["__metadata__"]["step"])' "$work/save_np4/checkpoint.safetensors")
[[ $saved == 5 ]] || fail "save_np4: the checkpoint left is after step $saved, expected 5"
saves=$(find "$work/save_np4" -name 'checkpoint-*.safetensors*' | wc -l)
((saves == 1)) || fail "save_np4: expected step 5's checkpoint alone, found: $(ls "$work/save_np4")"
echo "PASS: save_np4: the last good checkpoint (after step 5) stands"
