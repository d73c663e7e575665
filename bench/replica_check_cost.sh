#!/usr/bin/env bash
# Run from the repository root; RINGTRAIN names the binary (default ./build/ringtrain).
# What Note [Replica check] and Note [Agreed reductions] cost on ResNet-50, CPU, batch 8,
# synthetic 224x224 images, one rank, RUNS runs:
# 1. ringtrain bench prints the fingerprint's time (median of 5) as a share of the step at the
#    default dist.check_replicas_every_steps (the ranks' allgather of four words per rank adds
#    microseconds; the fingerprint is the cost);
# 2. the clip norm's sum: bench with train.clip_grad_norm = 1e9 (the norm computed every step,
#    nothing clipped) and 0, alternating; each line is one run's median images/s.
set -euo pipefail
R=${RINGTRAIN:-./build/ringtrain}
common=(--config configs/fashion_mnist.toml --set model.name=resnet50 --set data.source=synthetic
        --set data.image_size=224 --set model.num_classes=1000 --set train.batch_per_rank=8
        --set bench.warmup_steps=2 --set bench.windows=5 --set bench.steps_per_window=2)
for _ in $(seq "${RUNS:-3}"); do
  for clip in 1e9 0; do
    "$R" bench "${common[@]}" --set train.clip_grad_norm=$clip 2>&1 |
      grep -oE "replica check: [0-9.]+ ms|that is [0-9.]+% of a [0-9.]+ ms step|median [0-9.]+" |
      tr '\n' ' ' | sed "s/^/clip_grad_norm $clip: /"
    echo
  done
done
