#!/usr/bin/env bash
# The first run on a new image folder (Note [One index per job]): 4 ranks started on a folder with
# no index cache, ten times over, each time with the caches removed, all succeed; each time one
# cache per folder is left and no temporary file. (Every rank used to write the same temporary
# cache and rename it, and the losers stopped: 3 of 6 such runs failed.)
# usage: fresh_folder_ranks_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_fresh_folder_XXXXXX)
trap 'pkill -9 -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT
fashion_mnist_folders "$work/folders" 40 || exit 1
fail() { echo "FAIL: $*"; exit 1; }
for run in $(seq 10); do
  rm -f "$work"/folders/{train,val}/.ringtrain_index.tsv
  timeout 120 "$src/scripts/mpi_launch.sh" --testing -np 4 "$ringtrain" --config "$src/configs/fashion_mnist.toml" \
    --set model.name=lenet --set train.epochs=1 --set train.batch_per_rank=2 --set train.threads=1 \
    --set log.progress=none --set data.source=imagefolder --set data.dir="$work/folders" --set data.channels=1 \
    --set data.image_size=28 --set checkpoint.dir="$work/run$run" > "$work/run$run.out" 2>&1 ||
    { cat "$work/run$run.out"; fail "run $run of 4 ranks on a fresh folder failed"; }
  for part in train val; do
    left=$(cd "$work/folders/$part" && ls -A | grep '^\.' | tr '\n' ' ')
    [[ $left == ".ringtrain_index.tsv " ]] || fail "run $run left '$left' in $part/ (want the one cache)"
  done
done
echo "PASS: 10 runs of 4 ranks on a fresh image folder, each leaving one index cache per folder"
