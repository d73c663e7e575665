#!/usr/bin/env bash
# Run from the repository root; RINGTRAIN names the binary (default ./build/ringtrain).
# What sharding the update is worth under LARS (Note [Norms across shards]) beside plain SGD:
# ringtrain bench at 2 ranks, ResNet-18 on synthetic 32x32 images, batch 16 per rank, 1 thread
# per rank, alternating {sgd, lars} x dist.sharded_update {true, false}, RUNS rounds (default 3);
# each line is one run's median images/s.
set -euo pipefail
R=${RINGTRAIN:-./build/ringtrain}
common=(bench --config configs/fashion_mnist.toml --set model.name=resnet18 --set data.source=synthetic
        --set data.image_size=32 --set data.channels=3 --set train.batch_per_rank=16 --set train.threads=1
        --set bench.warmup_steps=3 --set bench.windows=5 --set bench.steps_per_window=4)
for _ in $(seq "${RUNS:-3}"); do
  for optimizer in sgd lars; do
    for sharded in true false; do
      median=$(scripts/mpi_launch.sh --testing -np 2 "$R" "${common[@]}" --set train.optimizer="\"$optimizer\"" \
        --set dist.sharded_update="$sharded" 2>&1 | grep -oE "median [0-9.]+" | head -1)
      echo "optimizer $optimizer sharded_update $sharded: $median"
    done
  done
done
