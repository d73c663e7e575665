#!/usr/bin/env bash
# `ringtrain predict` against torchvision and PyTorch on the same weights and images
# (tests/app/predict_oracle.py): the same top-5 classes in the same order, probabilities within
# 0.05 points. The images are not at the model's size, so the evaluation transform (shorter side
# resized, centre crop, luminance) is exercised.
# usage: predict_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
python=/usr/bin/python3
$python -c "import numpy, PIL, torch, torchvision" 2> /dev/null || { echo "SKIP: $python lacks torch, torchvision, PIL or numpy"; exit 77; }
work=$(mktemp -d /tmp/ringtrain_predict_XXXXXX)
trap 'rm -rf "$work"' EXIT
$python "$src/tests/app/predict_oracle.py" "$work" > "$work/expected.txt" || exit 1
"$ringtrain" predict --config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set data.source=imagefolder \
  --set data.dir="$work" --set data.channels=1 --set data.image_size=28 --set data.resize_size=32 \
  --weights "$work/weights.safetensors" --image "$work/a.png" "$work/b.jpg" > "$work/got.txt" || exit 1
paste -d'|' "$work/expected.txt" "$work/got.txt" | awk -F'|' '
  { split($1, e, " +"); split($2, g, " +") }
  NF != 2 { print "FAIL: line counts differ"; bad = 1; next }
  $1 !~ /%/ { if ($1 != $2) { print "FAIL: image " $2 " where " $1 " was expected"; bad = 1 } next }
  { if (e[4] != g[4] || e[5] != g[5]) { print "FAIL: rank " e[2] ": " $2 ", expected " $1; bad = 1 }
    d = e[3] - g[3]; if (d < 0) d = -d; if (d > 0.05) { print "FAIL: " $2 ", expected " $1; bad = 1 }
    if (d > worst) worst = d }
  END { if (!bad) printf "PASS: top-5 of 2 images equal torchvision, probabilities within %.2f points\n", worst; exit bad }'
