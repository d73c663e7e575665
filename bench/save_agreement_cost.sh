#!/usr/bin/env bash
# Run from the repository root; RINGTRAIN names the binary (default ./build/ringtrain).
# Per-step cost of the save agreement: ringtrain bench at 2 ranks, LeNet on synthetic 28x28,
# with checkpoint.signals at its default and with "" (no agreement), alternating, 5 pairs.
R=${RINGTRAIN:-./build/ringtrain}
for i in 1 2 3 4 5; do
  for sig in default none; do
    extra=(); [[ $sig == none ]] && extra=(--set 'checkpoint.signals=""')
    scripts/mpi_launch.sh --testing -np 2 $R bench --config configs/fashion_mnist.toml \
      --set model.name=lenet --set data.source=synthetic --set train.threads=1 --set train.batch_per_rank=32 \
      --set bench.windows=10 --set bench.steps_per_window=200 --set bench.warmup_steps=50 "${extra[@]}" 2>&1 \
      | grep -o "median [0-9.]*" | sed "s/^/$sig /"
  done
done
