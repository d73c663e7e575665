#!/usr/bin/env bash
# Training from tar shards end to end: `ringtrain pack` writes Fashion-MNIST's PNG folders as
# shards; 2 ranks trained from the shards, and from the same images as TFRecord files, end
# bit-identical to 2 ranks trained from the folders with the same seed; a run resumed from a checkpoint saved mid-epoch ends bit-identical to the
# uninterrupted one; a member with no label stops a data.on_bad_file = "error" run on every rank
# with a message naming shard and member, and is named and skipped otherwise.
# usage: shards_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_shards_XXXXXX)
trap 'pkill -9 -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT
fashion_mnist_folders "$work/folders" 400 || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$ringtrain" pack --from "$work/folders" --to "$work/shards" --shard-mb 0.05 > "$work/pack.out" 2>&1 ||
  { cat "$work/pack.out"; fail "pack: exit $?"; }
shards=$(ls "$work/shards/train" | grep -c '\.tar$')
((shards > 3)) || fail "pack wrote $shards training shards (want several at 0.05 MiB)"
"$ringtrain" pack --from "$work/folders" --to "$work/shards" > "$work/repack.out" 2>&1 &&
  fail "pack wrote over existing shards"
grep -q "already holds shards" "$work/repack.out" || { cat "$work/repack.out"; fail "no refusal message"; }

common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=2
        --set train.batch_per_rank=8 --set train.threads=1 --set log.progress=none --set data.channels=1
        --set data.image_size=28)
run() {  # run NAME SOURCE DIR [args...]
  local name=$1 source=$2 dir=$3
  shift 3
  timeout 180 "$src/scripts/mpi_launch.sh" --testing -np 2 "$ringtrain" "${common[@]}" --set data.source="$source" \
    --set data.dir="$dir" --set checkpoint.dir="$work/$name" "$@" > "$work/$name.out" 2>&1
}
same() { python3 "$src/tests/support/same_tensors.py" "$work/$1/checkpoint.safetensors" "$work/$2/checkpoint.safetensors"; }
run folders imagefolder "$work/folders" || { cat "$work/folders.out"; fail "folders: exit $?"; }
run shards shards "$work/shards" || { cat "$work/shards.out"; fail "shards: exit $?"; }
same folders shards || fail "2 ranks trained from shards differ from 2 ranks trained from the folders"
# The same folders as TFRecord files of tf.Examples, written by Python's protobuf (1-based labels).
for part in train val; do
  /usr/bin/python3 "$src/tests/data/write_tfrecords.py" "$work/folders/$part" "$work/tfrecords/$part" --per-file 150 ||
    fail "cannot write TFRecords (python3-protobuf and python3-crcmod are in scripts/setup.sh)"
done
run tfrecords tfrecord "$work/tfrecords" || { cat "$work/tfrecords.out"; fail "tfrecords: exit $?"; }
same folders tfrecords || fail "2 ranks trained from TFRecords differ from 2 ranks trained from the folders"

run saving shards "$work/shards" --set checkpoint.every_steps=7 --set checkpoint.keep=0 ||
  { cat "$work/saving.out"; fail "saving: exit $?"; }
mid=$(python3 -c 'print(f"checkpoint-{7 * 16:012d}.safetensors")')  # step 7 of 25 per epoch
[[ -f $work/saving/$mid ]] || fail "no $mid among: $(ls "$work/saving")"
mkdir "$work/resumed" && cp "$work/saving/$mid" "$work/resumed/"
run resumed shards "$work/shards" --resume "$work/resumed" || { cat "$work/resumed.out"; fail "resumed: exit $?"; }
grep -q "resumed from .*inside epoch 1" "$work/resumed.out" || { cat "$work/resumed.out"; fail "not resumed mid-epoch"; }
same shards resumed || fail "the run resumed mid-epoch from shards differs from the uninterrupted run"

# A sample's label member removed from the first training shard (GNU tar rewrites it).
first=$work/shards/train/train-000000.tar
label=$(tar tf "$first" | grep '\.cls$' | head -1)
tar --delete -f "$first" "$label" || fail "cannot delete $label from $first"
image=$(tar tf "$first" | head -1)
run strict shards "$work/shards" --set data.on_bad_file=error --set train.epochs=1 &&
  fail "a member with no label did not stop data.on_bad_file = \"error\""
grep -q "train-000000.tar' member '$image': no label" "$work/strict.out" ||
  { cat "$work/strict.out"; fail "the error does not name the shard and member"; }
run lenient shards "$work/shards" --set train.epochs=1 || { cat "$work/lenient.out"; fail "lenient: exit $?"; }
[[ $(grep -c "left out of the index: .*member '$image': no label" "$work/lenient.out") == 1 ]] ||
  { cat "$work/lenient.out"; fail "the member left out is not named once"; }
echo "PASS: $shards packed shards and TFRecords train 2 ranks bit-identically to the folders, resume mid-epoch exactly, and name a member with no label"
