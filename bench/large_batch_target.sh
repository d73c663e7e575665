#!/usr/bin/env bash
# Run from the repository root; RINGTRAIN names the binary (default ./build/ringtrain).
# Epochs to a target: can LARS with polynomial decay train at a large batch what SGD with the
# linear scaling rule cannot, given a budget? simple_cnn (two conv + batch-norm blocks) on
# Fashion-MNIST, 2 ranks of 1 thread each, test top-1 after every epoch. Both arms and the
# baseline share weight decay (WEIGHT_DECAY, default 5e-5) and label smoothing (0.1), and batch
# norm always sees 32 images: a large batch is 2 ranks x 32 x accumulated micro-batches.
#   baseline: 64 images a step (2 ranks x 32), SGD at 0.4 per 256, cosine decay after a warmup
#             of WARMUP_SHARE of the steps (default 0.15);
#   sgd:      BATCH images a step (default 2,048), the same SGD recipe, the rate linearly scaled
#             from RATE per 256 (Goyal et al.'s rule and warmup);
#   lars:     the same batch, LARS (trust coefficient 0.001, momentum 0.9, epsilon 0) and poly
#             decay (power 2, to 0.0001) after the same warmup, RATE for the whole batch (train.lr).
# For each schedule of EPOCHS_LIST epochs (default "20 40 80"): the baseline for each seed of SEEDS
# (default "1 2 3"); each arm on seed 1 at each rate of its grid (on the first schedule SGD_RATES
# and LARS_RATES, factors of about 1.4; on the others the previous schedule's best rate and its
# neighbours at 1.4x), the grid grown by a factor of 1.4 past its end while seed 1's best rate
# sits at that end (3 times at most); then the other seeds at the best rate. The target of a schedule is the mean
# of the baseline's final top-1 over the seeds, minus 0.5 point; a run's figure is the first epoch
# whose evaluation reaches it.
# Then BATCHES (default "1024 4096 8192") on the SWEEP_EPOCHS schedule (default 40), every seed:
# SGD at its best rate per 256 at BATCH (the linear scaling rule), LARS at its best rate scaled by
# the square root of the batch ratio (MLPerf's reference rates grow about so from 3k to 8k), to find
# the largest batch where each arm still reaches the target.
# Resumable: a run whose metrics.jsonl holds its last epoch is kept, so a killed campaign goes on
# where it stopped. A run whose loss went to infinity is kept as diverged (its epochs.csv rows end
# with "nan" at its schedule's last epoch: it never reaches the target). Writes OUT/epochs.csv (run,
# arm, batch, epochs, seed, rate, epoch, test top-1), OUT/summary.md (epochs to target per arm,
# batch, schedule and rate: median and range over the seeds) and OUT/curves.png (the baseline and
# each arm's best rate per schedule, seed 1).
# usage: bench/large_batch_target.sh [OUT]     (default runs/large_batch_target)
set -euo pipefail
R=${RINGTRAIN:-./build/ringtrain}
out=${1:-runs/large_batch_target}
epochs_list=${EPOCHS_LIST:-20 40 80}
seeds=${SEEDS:-1 2 3}
batch=${BATCH:-2048}
sgd_rates=${SGD_RATES:-0.025 0.035 0.05 0.07}
lars_rates=${LARS_RATES:-1.1 1.6 2.3 3.2}
batches=${BATCHES:-1024 4096 8192}
sweep_epochs=${SWEEP_EPOCHS:-40}
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

best() { collect; python3 bench/large_batch_target_summary.py "$out/epochs.csv" --best "$1" "$batch" "$2"; }
# scaled RATE FACTOR: the rate times the factor, to two significant digits.
scaled() { python3 -c "import sys; print(f'{float(sys.argv[1]) * float(sys.argv[2]):.2g}')" "$1" "$2"; }
declare -A best_rate
seed_list=($seeds)
previous=
for epochs in $epochs_list; do
  for seed in $seeds; do run "baseline_b64_e${epochs}_s${seed}_r0.4" "$epochs" "$seed" 64 baseline 0.4; done
  for arm in sgd lars; do
    if [[ -n $previous ]]; then
      b=${best_rate[$arm,$previous]}
      grid=("$(scaled "$b" 0.714)" "$b" "$(scaled "$b" 1.4)")
    elif [[ $arm == sgd ]]; then grid=($sgd_rates)
    else grid=($lars_rates); fi
    for rate in "${grid[@]}"; do run "${arm}_b${batch}_e${epochs}_s${seed_list[0]}_r${rate}" "$epochs" "${seed_list[0]}" "$batch" "$arm" "$rate"; done
    for _ in 1 2 3; do
      b=$(best "$arm" "$epochs")
      if [[ $b == "${grid[0]}" ]]; then grid=("$(scaled "$b" 0.714)" "${grid[@]}"); rate=${grid[0]}
      elif [[ $b == "${grid[-1]}" ]]; then grid+=("$(scaled "$b" 1.4)"); rate=${grid[-1]}
      else break; fi
      run "${arm}_b${batch}_e${epochs}_s${seed_list[0]}_r${rate}" "$epochs" "${seed_list[0]}" "$batch" "$arm" "$rate"
    done
    b=$(best "$arm" "$epochs")
    best_rate[$arm,$epochs]=$b
    for seed in "${seed_list[@]:1}"; do run "${arm}_b${batch}_e${epochs}_s${seed}_r${b}" "$epochs" "$seed" "$batch" "$arm" "$b"; done
  done
  previous=$epochs
done
for b in $batches; do
  lars_rate=$(scaled "${best_rate[lars,$sweep_epochs]}" "$(python3 -c "print(($b / $batch) ** 0.5)")")
  for seed in $seeds; do
    run "sgd_b${b}_e${sweep_epochs}_s${seed}_r${best_rate[sgd,$sweep_epochs]}" "$sweep_epochs" "$seed" "$b" sgd "${best_rate[sgd,$sweep_epochs]}"
    run "lars_b${b}_e${sweep_epochs}_s${seed}_r${lars_rate}" "$sweep_epochs" "$seed" "$b" lars "$lars_rate"
  done
done
collect
python3 bench/large_batch_target_summary.py "$out/epochs.csv" "$sweep_epochs" --plot "$out/curves.gp" > "$out/summary.md"
gnuplot -e "out='$out'" "$out/curves.gp"
cat "$out/summary.md"
echo "wrote $out/epochs.csv, $out/summary.md and $out/curves.png"
