#!/usr/bin/env bash
# What freezing saves: ResNet-50 at SIZE px (default 128), 2 ranks of 1 thread on this host,
# `ringtrain bench` of the whole model and of the model with conv1, bn1 and layer1-3 frozen
# (finetune.freeze), alternated REPEATS times each (default 3). Prints one row per run (images/s,
# seconds a step, the gradient floats a step averages) and the medians and their ratios.
# usage: bench/finetune_speed.sh [OUT]     (default runs/finetune_speed)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/finetune_speed} repeats=${REPEATS:-3} size=${SIZE:-128}
bin=$PWD/build/ringtrain
[[ -x $bin ]] || { echo "finetune_speed: build ringtrain first ($bin)" >&2; exit 1; }
mkdir -p "$out"
common=(bench --config configs/cpu/resnet101.toml --set model.name=resnet50 --set data.image_size="$size"
        --set train.batch_per_rank=8 --set train.threads=1 --set bench.warmup_steps=2 --set bench.windows=3
        --set bench.steps_per_window=2)
run() {  # run ARM: one bench job's "images/s gradient_floats"
  local arm=$1 args=("${common[@]}")
  [[ $arm == frozen ]] && args+=(--set 'finetune.freeze="conv1,bn1,layer1,layer2,layer3"')
  scripts/mpi_launch.sh --bind-to none -np 2 "$bin" "${args[@]}" > "$out/$arm.log" 2>&1
  local json
  json=$(grep '^{"kind":"bench"' "$out/$arm.log" | head -1)
  python3 -c 'import json, sys; r = json.loads(sys.argv[1]); print(r["median_images_per_s"], r["gradient_floats"])' "$json"
}
median() { sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf '%-6s %4s %12s %10s %16s\n' arm run images/s s/step gradient_floats | tee "$out/speed.txt"
: > "$out/whole.ips"
: > "$out/frozen.ips"
for ((k = 1; k <= repeats; k++)); do
  for arm in whole frozen; do
    read -r ips floats < <(run "$arm")
    echo "$ips" >> "$out/$arm.ips"
    echo "$floats" > "$out/$arm.floats"
    printf '%-6s %4d %12.3f %10.3f %16d\n' "$arm" "$k" "$ips" "$(awk -v i="$ips" 'BEGIN {print 16 / i}')" "$floats" |
      tee -a "$out/speed.txt"
  done
done
whole=$(median < "$out/whole.ips") frozen=$(median < "$out/frozen.ips")
printf 'medians: whole %.3f, frozen %.3f images/s: step time frozen / whole = %.2f; averaged floats frozen / whole = %.3f\n' \
  "$whole" "$frozen" "$(awk -v a="$whole" -v b="$frozen" 'BEGIN {print a / b}')" \
  "$(awk -v a="$(cat "$out/whole.floats")" -v b="$(cat "$out/frozen.floats")" 'BEGIN {print b / a}')" | tee -a "$out/speed.txt"
