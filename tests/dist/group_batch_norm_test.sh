#!/usr/bin/env bash
# train.bn_group in training (Note [Group batch norm]): one step of resnet_mini (batch norm, no
# dropout) on a Fashion-MNIST subset, every tensor of the checkpoint (weights, momentum: the step's
# gradients, running statistics) compared with a run that holds the same images on fewer ranks:
#   flat:      2 ranks x 16 images with bn_group = 2   against 1 rank x 32;
#   two-level: 4 ranks x 16 as 2 fake hosts x 2 ranks (RINGTRAIN_FAKE_HOST_RANKS) with bn_group =
#              2, the gradients over the two-level ring, against 2 ranks x 32 each on its own;
#   control:   2 ranks x 16 with bn_group = 1 against 1 rank x 32 must differ.
# The tolerance is 5% of each tensor's largest magnitude: the group's statistics differ from one
# rank's in the last bits, and an activation that sits on a ReLU's kink falls the other way,
# moving one element's gradient (measured: 1.6% at most; the control differs by 75%). The exact
# check of the arithmetic is tests/nn/group_batch_norm_test.cpp. Layouts that do not divide into
# groups are refused naming the layout.
# With "cuda": the flat comparison and its control on 2 GPUs, the group's averages over NCCL
# (skipped without 2 GPUs: NCCL refuses two ranks on one).
# usage: group_batch_norm_test.sh RINGTRAIN SOURCE_DIR [cuda]      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2 device=${3:-cpu}
if [[ $device == cuda ]]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU" || true)
  if [[ ${gpus:-0} -lt 2 ]]; then echo "SKIP: the GPU's group batch norm needs 2 GPUs, this machine has ${gpus:-0}"; exit 77; fi
fi
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_bn_group_XXXXXX)
trap 'rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh
fashion_mnist_subset "$work/data64" 64 64 > /dev/null || exit 1
sixty_four_images=("${subset_data[@]}")
fashion_mnist_subset "$work/data32" 32 64 > /dev/null || exit 1
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=resnet_mini --set train.epochs=1
        --set train.threads=1 --set log.progress=none --set schedule.kind=constant --set schedule.warmup_epochs=0
        --set train.device="$device" "${subset_data[@]}")
fail() { echo "FAIL: $1"; [[ -f $work/$2.out ]] && cat "$work/$2.out"; exit 1; }
run() {  # run NAME NP FAKE_HOST_RANKS ringtrain-settings... (FAKE_HOST_RANKS 0: the real host)
  local name=$1 np=$2 fake=$3
  shift 3
  local hosts=()
  ((fake > 0)) && hosts=(RINGTRAIN_FAKE_HOST_RANKS="$fake")
  env "${hosts[@]}" timeout 120 "$launch" --testing -np "$np" "$ringtrain" "${common[@]}" "$@" \
    --set checkpoint.dir="$work/$name" > "$work/$name.out" 2>&1
}
close() {  # close REFERENCE OTHER: every tensor within rounding
  python3 "$src/tests/support/close_tensors.py" 5e-2 "$work/$1/checkpoint.safetensors" "$work/$2/checkpoint.safetensors"
}

run one_of_32 1 0 --set train.batch_per_rank=32 || fail "1 rank x 32" one_of_32
run group_of_2 2 0 --set train.batch_per_rank=16 --set train.bn_group=2 || fail "2 ranks x 16, bn_group 2" group_of_2
close one_of_32 group_of_2 || fail "2 ranks x 16 with bn_group = 2 did not train as 1 rank x 32" group_of_2
run alone 2 0 --set train.batch_per_rank=16 || fail "2 ranks x 16, bn_group 1" alone
close one_of_32 alone > /dev/null && fail "bn_group = 1 at 2 x 16 matched 1 x 32: the comparison cannot fail" alone
if [[ $device == cuda ]]; then
  grep -q "images each, over NCCL" "$work/group_of_2.out" || fail "the group did not average over NCCL" group_of_2
  echo "PASS: on the GPU, bn_group = 2 trains 2 x 16 as 1 x 32 over NCCL"
  exit 0
fi

run two_of_32 2 0 --set train.batch_per_rank=32 "${sixty_four_images[@]}" || fail "2 ranks x 32" two_of_32
run two_hosts 4 2 --set train.batch_per_rank=16 --set train.bn_group=2 "${sixty_four_images[@]}" ||
  fail "4 ranks x 16 on 2 fake hosts" two_hosts
grep -q "two-level ring (2 hosts x 2 ranks" "$work/two_hosts.out" || fail "the 2 x 2 run did not use the two-level ring" two_hosts
close two_of_32 two_hosts || fail "2 hosts x 2 ranks x 16 with bn_group = 2 did not train as 2 ranks x 32" two_hosts

run three 3 0 --set train.batch_per_rank=16 --set train.bn_group=2
(($? != 0)) || fail "bn_group = 2 on 3 ranks was not refused" three
grep -q "train.bn_group = 2 needs each host's ranks in groups of 2 consecutive ranks; this job has 1 host x 3 ranks" \
  "$work/three.out" || fail "the refusal does not name the layout" three
run too_big 2 0 --set train.batch_per_rank=16 --set train.bn_group=4
(($? != 0)) || fail "bn_group = 4 on 2 ranks was not refused" too_big
grep -q "train.bn_group = 4 needs each host's ranks in groups of 4 consecutive ranks; this job has 1 host x 2 ranks" \
  "$work/too_big.out" || fail "the refusal does not name the layout" too_big
echo "PASS: bn_group = 2 trains 2 x 16 as 1 x 32 and 2 hosts x 2 x 16 as 2 x 32; uneven layouts refused"
