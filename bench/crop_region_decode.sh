#!/usr/bin/env bash
# What crop-region decoding pays (Note [Crop-region decoding] in data/jpeg_decode.cpp): the image
# pipeline's training transform (random resized crop 224, flip, normalise) on ImageNet-sized JPEGs
# with 1 worker, every JPEG decoded whole and then cropped, against only the crop's box decoded,
# alternating within each repetition; prints each run's median images/s and the medians' ratio.
#   bench/crop_region_decode.sh [REPS] [IMAGES]      (defaults: 5 640)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5} images=${2:-640}
bin=./build/bench/image_pipeline_bench
[[ -x $bin ]] || { echo "crop_region_decode: build first ($bin)" >&2; exit 1; }
source bench/photo_tree.sh
source bench/median.sh
tree=$(photo_tree "$images")
whole="" region=""
for ((r = 1; r <= reps; r++)); do
  for how in whole region; do
    rate=$("$bin" "$tree" --workers 1 --passes 3 --decode "$how" | sed -n 's/^ringtrain: median \([0-9.]*\).*/\1/p')
    echo "repetition $r: $how $rate images/s"
    if [[ $how == whole ]]; then whole+="$rate "; else region+="$rate "; fi
  done
done
a=$(median_of $whole) b=$(median_of $region)
awk -v a="$a" -v b="$b" 'BEGIN { printf "whole decode %.1f images/s per worker, crop region %.1f: %.2fx\n", a, b, b / a }'
