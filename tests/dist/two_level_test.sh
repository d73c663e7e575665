#!/usr/bin/env bash
# The two-level ring in training, on one machine split into fake hosts (RINGTRAIN_FAKE_HOST_RANKS;
# no namespaces needed): LeNet for 4 steps on 4 ranks as 2 hosts x 2 ranks (auto picks the
# two-level ring; also with MPI point-to-point between hosts and without the sharded update), as 4
# hosts x 1 rank and as 1 host x 4 ranks, each checkpoint within rounding of the flat ring's on one
# host (the sums are formed in another order). Uneven hosts: auto falls back to the flat ring
# saying why, two_level stops with a message naming the layout.
# usage: two_level_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_two_level_XXXXXX)
trap 'rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh
fashion_mnist_subset "$work/data" 512 256 || exit 1
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=1 --set train.threads=1
        --set train.batch_per_rank=32 --set log.progress=none "${subset_data[@]}")
run() {  # run NAME FAKE_HOST_RANKS ringtrain-settings...
  local name=$1 fake=$2
  shift 2
  RINGTRAIN_FAKE_HOST_RANKS=$fake timeout 120 "$launch" --testing -np 4 "$ringtrain" "${common[@]}" "$@" \
    --set checkpoint.dir="$work/$name" > "$work/$name.out" 2>&1
}
expect_line() {  # expect_line NAME TEXT
  grep -qF "$2" "$work/$1.out" || { echo "FAIL: $1 does not say '$2'"; cat "$work/$1.out"; exit 1; }
}

run flat 4 --set dist.hierarchy=flat || { echo "FAIL: flat run"; cat "$work/flat.out"; exit 1; }
expect_line flat "ring over shared memory"
run two_by_two 2 || { echo "FAIL: 2 x 2 run"; cat "$work/two_by_two.out"; exit 1; }
expect_line two_by_two "two-level ring (2 hosts x 2 ranks: shared memory inside a host, TCP between hosts)"
run two_by_two_mpi 2 --set dist.transport=mpi --set dist.sharded_update=false ||
  { echo "FAIL: 2 x 2 over MPI"; cat "$work/two_by_two_mpi.out"; exit 1; }
expect_line two_by_two_mpi "two-level ring (2 hosts x 2 ranks: shared memory inside a host, MPI point-to-point between hosts)"
run four_by_one 1 --set dist.hierarchy=two_level || { echo "FAIL: 4 x 1"; cat "$work/four_by_one.out"; exit 1; }
expect_line four_by_one "two-level ring (4 hosts x 1 rank:"
run one_by_four 4 --set dist.hierarchy=two_level || { echo "FAIL: 1 x 4"; cat "$work/one_by_four.out"; exit 1; }
expect_line one_by_four "two-level ring (1 host x 4 ranks:"
python3 "$src/tests/support/close_tensors.py" 1e-5 "$work/flat/checkpoint.safetensors" \
  "$work"/{two_by_two,two_by_two_mpi,four_by_one,one_by_four}/checkpoint.safetensors || { echo "FAIL: checkpoints differ"; exit 1; }

run uneven_auto 3 || { echo "FAIL: uneven hosts with auto"; cat "$work/uneven_auto.out"; exit 1; }
expect_line uneven_auto "the ranks span 2 hosts with 3 and 1 ranks; the two-level ring needs as many on every host"
expect_line uneven_auto "ring over shared memory"
run uneven_two_level 3 --set dist.hierarchy=two_level
rc=$?
((rc != 0 && rc != 124)) || { echo "FAIL: two_level on uneven hosts exited $rc"; cat "$work/uneven_two_level.out"; exit 1; }
expect_line uneven_two_level "needs as many ranks on every host, and this job has 2 hosts with 3 and 1 ranks"
echo "PASS: the two-level ring trains as the flat ring does on 2x2, 4x1 and 1x4 fake hosts; uneven hosts handled"
