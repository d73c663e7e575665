#!/usr/bin/env bash
# Run from the repository root; RINGTRAIN names the binary (default ./build/ringtrain).
# Epochs to a target: can LARS with polynomial decay train at a large batch what SGD with the
# linear scaling rule cannot, given a budget? simple_cnn (two conv + batch-norm blocks) on
# Fashion-MNIST, 2 ranks of 1 thread each, test top-1 after every epoch. Both arms and the
# baseline share weight decay (WEIGHT_DECAY, default 5e-5) and label smoothing (0.1), and batch
# norm always sees 32 images: a large batch is 2 ranks x 32 x accumulated micro-batches.
#   baseline: 64 images a step (2 ranks x 32), SGD at 0.4 per 256, cosine decay after a warmup
#             of WARMUP_SHARE of the steps (default 0.15);
#   sgd:      BATCH images a step (default 4,096), the same SGD recipe, the rate linearly scaled
#             from RATE per 256 (Goyal et al.'s rule and warmup);
#   lars:     the same batch, LARS (trust coefficient 0.001, momentum 0.9, epsilon 0) and poly
#             decay (power 2, to 0.0001) after the same warmup, RATE for the whole batch (train.lr).
# For each schedule of EPOCHS_LIST epochs (default "20 40 80") and each seed of SEEDS (default
# "1 2 3"): the baseline, then each rate of SGD_RATES and LARS_RATES (grids of factors of about
# 1.4). The target of a schedule is the mean of the baseline's final top-1 over the seeds, minus
# 0.5 point; a run's figure is the first epoch whose evaluation reaches it.
# Then BATCHES (default "8192 16384 32768"): each arm at its best rate at BATCH (LARS's as it is,
# SGD's per 256) on the longest schedule, to find the largest batch where each still reaches the
# target.
# Resumable: a run whose metrics.jsonl holds its last epoch is kept, so a killed campaign goes on
# where it stopped. A run whose loss went to infinity is kept as diverged (its epochs.csv rows end
# with "nan" at its schedule's last epoch: it never reaches the target). Writes OUT/epochs.csv (run, arm, batch, epochs, seed, rate, epoch, test top-1),
# OUT/summary.md (epochs to target per arm, schedule and rate: median and range over the seeds)
# and OUT/curves.png (each arm's best rate per schedule, seed 1).
# usage: bench/large_batch_target.sh [OUT]     (default runs/large_batch_target)
set -euo pipefail
R=${RINGTRAIN:-./build/ringtrain}
out=${1:-runs/large_batch_target}
epochs_list=${EPOCHS_LIST:-20 40 80}
seeds=${SEEDS:-1 2 3}
batch=${BATCH:-4096}
sgd_rates=${SGD_RATES:-0.018 0.025 0.035 0.05}
lars_rates=${LARS_RATES:-1.6 2.3 3.2 4.5}
batches=${BATCHES:-8192 16384 32768}
warmup_share=${WARMUP_SHARE:-0.15}
weight_decay=${WEIGHT_DECAY:-5e-5}
train_images=60000
command -v gnuplot > /dev/null || { echo "gnuplot is missing (Debian: gnuplot-nox, in scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$out"

# run NAME EPOCHS SEED BATCH ARM RATE: trains unless its metrics already hold the last epoch.
run() {
  local name=$1 epochs=$2 seed=$3 b=$4 arm=$5 rate=$6
  local dir=$out/$name accumulate=$(( b / 64 ))
  [[ -f $dir/diverged ]] && return
  if [[ -s $dir/metrics.jsonl ]] && grep -q "\"kind\":\"epoch\",\"epoch\":$epochs," "$dir/metrics.jsonl"; then return; fi
  local steps_per_epoch=$(( train_images / b ))
  local warmup
  warmup=$(awk -v e="$epochs" -v s="$warmup_share" 'BEGIN { printf "%.4f", e * s }')
  local args=(--config configs/fashion_mnist.toml --set model.name=simple_cnn --set train.threads=1
              --set train.epochs="$epochs" --set train.seed="$seed" --set train.batch_per_rank=32
              --set train.accumulate_steps="$accumulate" --set train.weight_decay="$weight_decay"
              --set train.label_smoothing=0.1 --set schedule.warmup_epochs="$warmup"
              --set log.progress=none --set checkpoint.every_epochs="$epochs" --set checkpoint.dir="$dir")
  case $arm in
    baseline|sgd) args+=(--set train.lr_per_256="$rate" --set schedule.kind=cosine) ;;
    lars) args+=(--set train.optimizer=lars --set train.lr="$rate" --set train.lr_per_256=0 --set train.momentum=0.9
                 --set schedule.kind=poly --set schedule.end_lr=0.0001 --set schedule.final_fraction=0) ;;
  esac
  rm -rf "$dir"
  echo "$(date +%T) $name: $epochs epochs of $steps_per_epoch steps" >&2
  if ! scripts/mpi_launch.sh -np 2 "$R" train "${args[@]}" > "$out/$name.log" 2>&1; then
    # A rate too high for the batch: the loss goes to infinity. An outcome, kept as one.
    grep -q "error: loss became" "$out/$name.log" || { tail -20 "$out/$name.log"; exit 1; }
    touch "$dir/diverged"
    echo "$(date +%T) $name: diverged" >&2
  fi
}

# Every finished run's curve, one line per evaluation.
collect() {
  python3 - "$out" > "$out/epochs.csv" << 'PY'
import json, os, sys
out = sys.argv[1]
print("run,arm,batch,epochs,seed,rate,epoch,test_top1")
for name in sorted(os.listdir(out)):
    path = os.path.join(out, name, "metrics.jsonl")
    if not os.path.isfile(path):
        continue
    arm, batch, epochs, seed, rate = name.split("_")
    for line in open(path):
        r = json.loads(line)
        if r.get("kind") == "epoch" and "test_top1" in r:
            print(f"{name},{arm},{batch[1:]},{epochs[1:]},{seed[1:]},{rate[1:]},{r['epoch']},{100 * r['test_top1']:.2f}")
    if os.path.exists(os.path.join(out, name, "diverged")):  # ended there: never reaches the target
        print(f"{name},{arm},{batch[1:]},{epochs[1:]},{seed[1:]},{rate[1:]},{epochs[1:]},nan")
PY
}

for epochs in $epochs_list; do
  for seed in $seeds; do run "baseline_b64_e${epochs}_s${seed}_r0.4" "$epochs" "$seed" 64 baseline 0.4; done
  for seed in $seeds; do
    for rate in $sgd_rates; do run "sgd_b${batch}_e${epochs}_s${seed}_r${rate}" "$epochs" "$seed" "$batch" sgd "$rate"; done
    for rate in $lars_rates; do run "lars_b${batch}_e${epochs}_s${seed}_r${rate}" "$epochs" "$seed" "$batch" lars "$rate"; done
  done
done
collect
# The best rate of each arm: the fewest median epochs to the target on the longest schedule.
longest=$(tr ' ' '\n' <<< "$epochs_list" | sort -n | tail -1)
python3 bench/large_batch_target_summary.py "$out/epochs.csv" "$longest" > "$out/summary.md"
read -r best_sgd best_lars < <(sed -n 's/^best rates: sgd \([0-9.]*\), lars \([0-9.]*\)$/\1 \2/p' "$out/summary.md")
for b in $batches; do
  for seed in $seeds; do
    [[ -n $best_sgd ]] && run "sgd_b${b}_e${longest}_s${seed}_r${best_sgd}" "$longest" "$seed" "$b" sgd "$best_sgd"
    [[ -n $best_lars ]] && run "lars_b${b}_e${longest}_s${seed}_r${best_lars}" "$longest" "$seed" "$b" lars "$best_lars"
  done
done
collect
python3 bench/large_batch_target_summary.py "$out/epochs.csv" "$longest" --plot "$out/curves.gp" > "$out/summary.md"
gnuplot -e "out='$out'" "$out/curves.gp"
cat "$out/summary.md"
echo "wrote $out/epochs.csv, $out/summary.md and $out/curves.png"
