#!/usr/bin/env bash
# Run from the repository root; RINGTRAIN names the binary (default ./build/ringtrain).
# What Note [Replica check] costs on ResNet-50, CPU, batch 8, synthetic 224x224 images, one rank:
# ringtrain bench prints the fingerprint's time (median of 5) as a share of the step at the
# default dist.check_replicas_every_steps; RUNS runs. (The ranks' allgather of four words per
# rank adds microseconds; the fingerprint is the cost.)
set -euo pipefail
R=${RINGTRAIN:-./build/ringtrain}
for _ in $(seq "${RUNS:-3}"); do
  "$R" bench --config configs/fashion_mnist.toml --set model.name=resnet50 --set data.source=synthetic \
    --set data.image_size=224 --set model.num_classes=1000 --set train.batch_per_rank=8 \
    --set bench.warmup_steps=2 --set bench.windows=5 --set bench.steps_per_window=2 2>&1 | grep "replica check"
done
