#!/usr/bin/env bash
# bench/scaling_sweep.sh on LeNet at 1 and 2 ranks: it must write a CSV with one row per rank
# count (efficiency 1 at the 1-rank row, ideal = 2 x the 1-rank figure at the 2-rank row) and a
# PNG. Speed is not judged here: this machine is shared, and the figures are the benchmark's job.
# usage: scaling_sweep_test.sh SOURCE_DIR BINARY_DIR
set -euo pipefail
source_dir=$1 binary_dir=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$source_dir/bench/scaling_sweep.sh" \
  --config "$source_dir/configs/cpu/resnet101.toml" --ranks "1 2" --out "$out" --bin "$binary_dir/ringtrain" \
  --set model.name=lenet --set model.num_classes=10 --set data.image_size=28 --set train.threads=1 \
  --set bench.warmup_steps=1 --set bench.windows=3 --set bench.steps_per_window=2
python3 - "$out/sweep.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [int(r["ranks"]) for r in rows] == [1, 2], rows
one, two = rows
assert abs(float(one["efficiency"]) - 1) < 1e-3, one
assert abs(float(two["ideal_images_per_s"]) - 2 * float(one["images_per_s"])) < 1e-2 * float(one["images_per_s"]), two
assert abs(float(two["efficiency"]) - float(two["images_per_s"]) / float(two["ideal_images_per_s"])) < 1e-3, two
assert two["allreduce"] == "ring" and one["allreduce"] == "none", rows
print("sweep.csv:", [(r["ranks"], r["images_per_s"], r["efficiency"]) for r in rows])
PY
head -c 8 "$out/sweep.png" | od -An -tx1 | grep -q "89 50 4e 47 0d 0a 1a 0a" || { echo "sweep.png is not a PNG" >&2; exit 1; }
echo "scaling_sweep_test: CSV and PNG as expected"
