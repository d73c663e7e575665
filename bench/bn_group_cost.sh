#!/usr/bin/env bash
# Run from the repository root; RINGTRAIN names the binary (default ./build/ringtrain).
# What train.bn_group costs a step (Note [Group batch norm]): ringtrain bench on ResNet-50, CPU,
# batch 8 per rank, synthetic 224x224 images, 1 thread per rank, alternating the group sizes,
# RUNS rounds (default 3); each line is one run's median images/s.
#   2 ranks: bn_group 1 and 2;   4 ranks: bn_group 1, 2 and 4 (4 ranks on this machine's 2
#   cores are oversubscribed: the figure shows what waiting on a descheduled peer costs).
set -euo pipefail
R=${RINGTRAIN:-./build/ringtrain}
common=(bench --config configs/fashion_mnist.toml --set model.name=resnet50 --set data.source=synthetic
        --set data.image_size=224 --set model.num_classes=1000 --set train.batch_per_rank=8 --set train.threads=1
        --set bench.warmup_steps=1 --set bench.windows=3 --set bench.steps_per_window=2)
for _ in $(seq "${RUNS:-3}"); do
  for setting in "2 1" "2 2" "4 1" "4 2" "4 4"; do
    read -r np group <<< "$setting"
    median=$(scripts/mpi_launch.sh --testing -np "$np" "$R" "${common[@]}" --set train.bn_group="$group" 2>&1 |
      grep -oE "median [0-9.]+" | head -1)
    echo "ranks $np bn_group $group: $median"
  done
done
