#!/usr/bin/env bash
# Run from the repository root; RINGTRAIN names the binary (default ./build/ringtrain).
# What starting from trained weights buys (Note [Fine-tuning] in app/init_weights.h), on data that
# ships here: resnet_mini trained for 3 epochs on Fashion-MNIST's classes 0-4 (image folders of
# every training and test image of those classes, a 10-class head) is fine-tuned on classes 5-9
# (PER_CLASS training images each, default 100; every test image), a new 5-class head, for 2
# epochs; the same model from random weights trains 2 epochs on the same images. Each for every
# seed of SEEDS (default "1 2 3"). Writes OUT/summary.md: the final test top-1 per seed and arm,
# and the means.
# usage: bench/finetune_accuracy.sh [OUT]     (default runs/finetune_accuracy)
set -euo pipefail
R=${RINGTRAIN:-./build/ringtrain}
out=${1:-runs/finetune_accuracy} seeds=${SEEDS:-1 2 3} per_class=${PER_CLASS:-100}
mkdir -p "$out"
if [[ ! -d $out/first ]]; then
  python3 datasets/fashion_mnist_to_folders.py "$out/first" --classes 0,1,2,3,4 > /dev/null
  python3 datasets/fashion_mnist_to_folders.py "$out/second" --classes 5,6,7,8,9 --train-per-class "$per_class" > /dev/null
fi
folder=(--set data.source=imagefolder --set data.channels=1 --set data.image_size=28 --set data.random_crop=false
        --set data.flip=false --set log.progress=none)
if [[ ! -e $out/pretrained.safetensors ]]; then
  "$R" --config configs/fashion_mnist.toml "${folder[@]}" --set data.dir="$out/first" --set train.epochs=3 \
    --set checkpoint.dir="$out/pretrain" > "$out/pretrain.log" 2>&1 || { tail -5 "$out/pretrain.log"; exit 1; }
  cp -L "$out/pretrain/checkpoint.safetensors" "$out/pretrained.safetensors"
  echo "pretrained on classes 0-4: $(grep '^done:' "$out/pretrain.log")"
fi
top1() { sed -n 's/^done: test top-1 \([0-9.]*\)%.*/\1/p' "$1"; }
echo "| seed | from random weights | fine-tuned |" > "$out/summary.md"
echo "|---|---|---|" >> "$out/summary.md"
for seed in $seeds; do
  for arm in scratch finetuned; do
    args=("${folder[@]}" --set data.dir="$out/second" --set model.num_classes=5 --set train.epochs=2
          --set train.seed="$seed" --set checkpoint.dir="$out/${arm}_s$seed")
    [[ $arm == finetuned ]] && args+=(--set finetune.weights="$out/pretrained.safetensors")
    rm -rf "$out/${arm}_s$seed"
    "$R" --config configs/fashion_mnist.toml "${args[@]}" > "$out/${arm}_s$seed.log" 2>&1 ||
      { tail -5 "$out/${arm}_s$seed.log"; exit 1; }
  done
  echo "| $seed | $(top1 "$out/scratch_s$seed.log") | $(top1 "$out/finetuned_s$seed.log") |" | tee -a "$out/summary.md"
done
awk -F'|' 'NR > 2 {a += $3; b += $4; n++} END {printf "| mean | %.2f | %.2f |\n", a / n, b / n}' "$out/summary.md" \
  | tee -a "$out/summary.md"
