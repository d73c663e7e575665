#!/usr/bin/env bash
# docs/outputs.md's fields of metrics.jsonl held to the code and to a real run's records
# (tests/app/metrics_fields_test.py): 2 ranks of LeNet on a Fashion-MNIST subset, one epoch, with
# clipping, PowerSGD and a target, so that step, epoch and target records carry their optional
# fields.
# usage: metrics_fields_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_metrics_fields_XXXXXX)
trap 'rm -rf "$work"' EXIT
fashion_mnist_subset "$work/data" 2048 500 || exit 1
timeout 120 "$src/scripts/mpi_launch.sh" --testing -np 2 "$ringtrain" --config "$src/configs/fashion_mnist.toml" \
  --set model.name=lenet --set train.epochs=1 --set train.threads=1 --set train.batch_per_rank=32 \
  --set log.progress=none "${subset_data[@]}" --set train.clip_grad_norm=1 --set dist.compression=powersgd \
  --set dist.powersgd_start_step=5 --set eval.target_top1=0.99 --set checkpoint.dir="$work/run" > "$work/run.out" 2>&1
rc=$?
[[ $rc == 3 ]] || { echo "FAIL: the run ended with $rc, not 3 (target missed)"; tail -n 20 "$work/run.out"; exit 1; }
python3 "$src/tests/app/metrics_fields_test.py" "$src" "$work/run/metrics.jsonl"
