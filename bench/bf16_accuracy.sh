#!/usr/bin/env bash
# Run from the repository root; RINGTRAIN names the binary (default ./build/ringtrain).
# bf16's accuracy cost on the CPU (Note [CPU bfloat16] in nn/cpu_bf16.h): configs/fashion_mnist.toml
# as it is (resnet_mini, 5 epochs, cosine), one process, for each seed of SEEDS (default "1 2 3"),
# in fp32 and in bf16. Needs a CPU with bfloat16 units (or EMULATE=1, slowly). Resumable: a run
# whose metrics.jsonl holds its last epoch is kept.
# Writes OUT/top1.csv (precision, seed, epoch, test top-1) and OUT/summary.md: the final top-1 per
# seed, their means, and bf16's mean less fp32's.
# usage: bench/bf16_accuracy.sh [OUT]     (default runs/bf16_accuracy)
set -euo pipefail
R=${RINGTRAIN:-./build/ringtrain}
out=${1:-runs/bf16_accuracy}
seeds=${SEEDS:-1 2 3}
epochs=5
mkdir -p "$out"
run() {  # run PRECISION SEED
  local precision=$1 seed=$2 dir=$out/$1_s$2
  if grep -qs "\"kind\":\"epoch\",\"epoch\":$epochs," "$dir/metrics.jsonl"; then return; fi
  rm -rf "$dir"
  local start=$SECONDS
  "$R" --config configs/fashion_mnist.toml --set train.precision="$precision" --set train.seed="$seed" \
    --set train.bf16_emulation="$([[ ${EMULATE:-0} == 1 ]] && echo true || echo false)" \
    --set log.progress=none --set checkpoint.dir="$dir" > "$out/$1_s$2.log" 2>&1 ||
    { echo "bf16_accuracy: $precision seed $seed failed:"; tail -5 "$out/$1_s$2.log"; exit 1; }
  echo "$precision seed $seed: $(grep "^done:" "$out/$1_s$2.log") ($((SECONDS - start)) s)"
}
for seed in $seeds; do
  run fp32 "$seed"
  run bf16 "$seed"
done
python3 - "$out" << 'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
curves = {}
for path in sorted(glob.glob(f"{out}/*/metrics.jsonl")):
    precision, seed = os.path.basename(os.path.dirname(path)).rsplit("_s", 1)
    curves[(precision, int(seed))] = [100 * r["test_top1"] for r in map(json.loads, open(path))
                                      if r.get("kind") == "epoch" and "test_top1" in r]
with open(f"{out}/top1.csv", "w") as f:
    f.write("precision,seed,epoch,test_top1\n")
    for (p, seed), c in sorted(curves.items()):
        for e, t in enumerate(c, 1):
            f.write(f"{p},{seed},{e},{t}\n")
means = {}
lines = ["| precision | final test top-1 per seed (%) | mean |", "|---|---|---|"]
for p in ("fp32", "bf16"):
    finals = [c[-1] for (q, _), c in sorted(curves.items()) if q == p]
    if finals:
        means[p] = statistics.mean(finals)
        lines.append(f"| {p} | {', '.join(f'{x:.2f}' for x in finals)} | {means[p]:.2f} |")
if len(means) == 2:
    lines += ["", f"bf16's mean less fp32's: {means['bf16'] - means['fp32']:+.2f} point"]
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
