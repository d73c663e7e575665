#!/usr/bin/env bash
# Image pipeline throughput, ringtrain against torchvision (ImageFolder + DataLoader) on the same
# ImageNet-sized JPEGs with the same training transforms and the same number of workers,
# alternating within each repetition; prints the medians and their ratio.
#   bench/image_pipeline.sh [WORKERS] [REPS] [IMAGES]      (defaults: 2 3 640)
# The JPEGs: bench/photo_tree.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
workers=${1:-2} reps=${2:-3} images=${3:-640}
python=/usr/bin/python3
bin=./build/bench/image_pipeline_bench
[[ -x $bin ]] || { echo "image_pipeline: build first ($bin)" >&2; exit 1; }
source bench/photo_tree.sh
source bench/median.sh
tree=$(photo_tree "$images")
ours="" theirs=""
for ((r = 1; r <= reps; r++)); do
  ours+="$("$bin" "$tree" --workers "$workers" --passes 3 | sed -n 's/^ringtrain: median \([0-9.]*\).*/\1/p') "
  theirs+="$($python bench/image_pipeline_torchvision.py "$tree" --workers "$workers" --passes 3 |
             sed -n 's/^torchvision: median \([0-9.]*\).*/\1/p') "
  echo "repetition $r/$reps done" >&2
done
a=$(median_of $ours) b=$(median_of $theirs)
echo "decode + random resized crop 224 + flip + normalise, $images JPEGs of 500x375 (quality 90), $workers workers, median of $reps"
awk -v a="$a" -v b="$b" -v w="$workers" 'BEGIN {
  printf "ringtrain   %7.1f images/s (%6.1f per worker)\ntorchvision %7.1f images/s (%6.1f per worker)\nratio %.2fx\n",
         a, a / w, b, b / w, a / b }'
