#!/usr/bin/env bash
# Run from the repository root; RINGTRAIN names the binary (default ./build/ringtrain).
# PowerSGD's accuracy cost: MODEL (default simple_cnn: two conv + batch-norm blocks) on Fashion-MNIST as configs/fashion_mnist.toml
# trains it (5 epochs, cosine), 2 ranks of 1 thread, for each seed of SEEDS (default "1 2 3"):
# plain averaging, and dist.compression = "powersgd" at each rank of RANKS (default "1 2 4"),
# compressed from step START (default 235, a tenth of the run). The target is the mean of the
# plain runs' final test top-1 less 0.5 point; a run's figure is the first epoch whose evaluation
# reaches it. Resumable: a run whose metrics.jsonl holds its last epoch is kept.
# Writes OUT/top1.csv (arm, seed, epoch, test top-1) and OUT/summary.md.
# usage: bench/powersgd_accuracy.sh [OUT]     (default runs/powersgd_accuracy)
set -euo pipefail
R=${RINGTRAIN:-./build/ringtrain}
out=${1:-runs/powersgd_accuracy}
model=${MODEL:-simple_cnn} seeds=${SEEDS:-1 2 3} ranks=${RANKS:-1 2 4} start=${START:-235}
epochs=5
mkdir -p "$out"
run() {  # run NAME SEED [args...]
  local name=$1 seed=$2
  shift 2
  local dir=$out/$name
  if grep -qs "\"kind\":\"epoch\",\"epoch\":$epochs," "$dir/metrics.jsonl"; then return; fi
  rm -rf "$dir"
  scripts/mpi_launch.sh --oversubscribe -np 2 "$R" --config configs/fashion_mnist.toml --set model.name="$model" \
    --set train.threads=1 --set train.seed="$seed" --set log.progress=none --set checkpoint.dir="$dir" "$@" \
    > "$out/$name.log" 2>&1 || { echo "powersgd_accuracy: $name failed:"; tail -5 "$out/$name.log"; exit 1; }
  grep "^done:" "$out/$name.log"
}
for seed in $seeds; do
  run "plain_s$seed" "$seed"
  for k in $ranks; do
    run "rank${k}_s$seed" "$seed" --set dist.compression=powersgd --set dist.powersgd_rank="$k" \
      --set dist.powersgd_start_step="$start"
  done
done
python3 - "$out" "$epochs" "$start" "$model" << 'PY'
import glob, json, os, statistics, sys
out, epochs, start, model = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
curves = {}
for path in sorted(glob.glob(f"{out}/*/metrics.jsonl")):
    name = os.path.basename(os.path.dirname(path))
    arm, seed = name.rsplit("_s", 1)
    top1 = [100 * r["test_top1"] for r in map(json.loads, open(path)) if r.get("kind") == "epoch" and "test_top1" in r]
    curves[(arm, int(seed))] = top1
with open(f"{out}/top1.csv", "w") as f:
    f.write("arm,seed,epoch,test_top1\n")
    for (arm, seed), c in sorted(curves.items()):
        for e, t in enumerate(c, 1):
            f.write(f"{arm},{seed},{e},{t}\n")
arms = sorted({a for a, _ in curves}, key=lambda a: (a != "plain", a))
target = statistics.mean(c[-1] for (a, _), c in curves.items() if a == "plain") - 0.5
lines = [f"{model}, 2 ranks, {epochs} epochs; PowerSGD from step {int(start) + 1}. Target: the plain runs' mean "
         f"final test top-1 less 0.5 point, {target:.2f}%.", "",
         "| arm | final test top-1 per seed | mean | epochs to the target per seed |", "|---|---|---|---|"]
for arm in arms:
    runs = sorted((s, c) for (a, s), c in curves.items() if a == arm)
    finals = [c[-1] for _, c in runs]
    reach = [next((str(e) for e, t in enumerate(c, 1) if t >= target), "never") for _, c in runs]
    lines.append(f"| {arm} | {', '.join(f'{x:.2f}' for x in finals)} | {statistics.mean(finals):.2f} | {', '.join(reach)} |")
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
