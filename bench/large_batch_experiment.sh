#!/usr/bin/env bash
# Run from the repository root; RINGTRAIN names the binary (default ./build/ringtrain).
# Does plain SGD with the linear scaling rule hold at a large batch, and what does LARS with
# polynomial decay recover? simple_cnn (two conv + batch-norm blocks) on Fashion-MNIST, 2 ranks
# of 1 thread each, EPOCHS epochs (default 10) every run, test top-1 after each epoch:
#   small:        64 images a step (2 ranks x 32), SGD with the main job's rate (0.4 per 256)
#                 and cosine decay after 0.2 warmup epochs;
#   sgd_RATE:     4,096 a step (2 ranks x 256 x 8 accumulated micro-batches), the same SGD recipe
#                 with 2 warmup epochs (Goyal et al.'s rule); RATE per 256 images: 0.4 is the
#                 linear scaling rule's (6.4 at 4,096), the smaller ones a search below it;
#   lars_RATE:    the same batch, LARS (trust coefficient 0.001), momentum 0.9, weight decay 5e-5
#                 and poly decay (power 2) after 2 warmup epochs, MLPerf's recipe at 3k; 0.82 per
#                 256 is MLPerf's 3k rate scaled to 4,096, the smaller ones a search below it.
# Writes OUT/curves.csv (run, epoch, test top-1), OUT/curves.png (gnuplot) and each run's log.
# usage: bench/large_batch_experiment.sh [OUT]     (default runs/large_batch)
set -euo pipefail
R=${RINGTRAIN:-./build/ringtrain}
out=${1:-runs/large_batch}
epochs=${EPOCHS:-10}
command -v gnuplot > /dev/null || { echo "gnuplot is missing (Debian: gnuplot-nox, in scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$out"
common=(--config configs/fashion_mnist.toml --set model.name=simple_cnn --set train.threads=1
        --set train.epochs="$epochs" --set log.progress=none --set checkpoint.every_epochs="$epochs")
large=(--set train.batch_per_rank=256 --set train.accumulate_steps=8 --set schedule.warmup_epochs=2)
lars=(--set train.optimizer=lars --set schedule.kind=poly --set train.momentum=0.9 --set train.weight_decay=5e-5)
declare -A runs=([small]="--set train.batch_per_rank=32")
order=(small)
for rate in 0.4 0.1 0.025; do runs[sgd_$rate]="${large[*]} --set train.lr_per_256=$rate"; order+=("sgd_$rate"); done
for rate in 0.82 0.2 0.05; do runs[lars_$rate]="${large[*]} ${lars[*]} --set train.lr_per_256=$rate"; order+=("lars_$rate"); done
echo "run,epoch,test_top1" > "$out/curves.csv"
for run in "${order[@]}"; do
  read -r -a extra <<< "${runs[$run]}"
  rm -rf "${out:?}/$run"
  scripts/mpi_launch.sh -np 2 "$R" train "${common[@]}" "${extra[@]}" --set checkpoint.dir="$out/$run" \
    > "$out/$run.log" 2>&1 || { cat "$out/$run.log"; exit 1; }
  python3 - "$out/$run/metrics.jsonl" "$run" >> "$out/curves.csv" << 'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") == "epoch" and "test_top1" in r:
        print(f"{sys.argv[2]},{r['epoch']},{100 * r['test_top1']:.2f}")
PY
  grep "^done:" "$out/$run.log" | sed "s/^/$run: /"
done
plots=()
for run in "${order[@]}"; do
  case $run in
    small) title="64 a step, SGD (baseline)" ;;
    sgd_*) title="4,096 a step, SGD, ${run#sgd_} per 256" ;;
    lars_*) title="4,096 a step, LARS + poly, ${run#lars_} per 256" ;;
  esac
  plots+=("\"< grep ^$run, $out/curves.csv\" using 2:3 with linespoints title \"$title\"")
done
gnuplot << GP
set datafile separator ","
set terminal pngcairo size 900,640 font ",11"
set output "$out/curves.png"
set title "simple\\\\_cnn on Fashion-MNIST, 2 ranks, $epochs epochs each"
set xlabel "epoch"
set ylabel "test top-1 (%)"
set key below
set grid
plot $(IFS=,; echo "${plots[*]}")
GP
echo "wrote $out/curves.csv and $out/curves.png"
