#!/usr/bin/env bash
# Reading tar shards against reading an image folder (data/shard_index.h): the same ImageNet-sized
# JPEGs as a folder and as shards that `ringtrain pack` wrote, through the image pipeline's
# training transform with 1 worker, each JPEG decoded whole or only its crop's box, beside
# torchvision's ImageFolder + DataLoader; with a warm page cache, and with the page cache emptied
# before every pass (cold, root only: each pass reads the disk). Runs alternate within each
# repetition; prints each configuration's median images/s per worker and the ratios.
#   bench/shards_vs_folders.sh [REPS] [IMAGES] [SHARD_MB]      (defaults: 3 640 8)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3} images=${2:-640} shard_mb=${3:-8}
python=/usr/bin/python3
bin=./build/bench/image_pipeline_bench ringtrain=./build/ringtrain
[[ -x $bin && -x $ringtrain ]] || { echo "shards_vs_folders: build first ($bin, $ringtrain)" >&2; exit 1; }
[[ -w /proc/sys/vm/drop_caches ]] || { echo "shards_vs_folders: the cold runs need root" >&2; exit 1; }
source bench/photo_tree.sh
source bench/median.sh
tree=$(photo_tree "$images")
work=$(mktemp -d /tmp/ringtrain_shards_bench_XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/data" && ln -s "$tree" "$work/data/train"
"$ringtrain" pack --from "$work/data" --to "$work/shards" --shard-mb "$shard_mb" >&2
configs=(folder_whole folder_region shards_whole shards_region torchvision)
declare -A rates
for ((r = 1; r <= reps; r++)); do
  for cache in warm cold; do
    cold=$([[ $cache == cold ]] && echo 1 || echo 0)
    for c in "${configs[@]}"; do
      if [[ $c == torchvision ]]; then
        rate=$($python bench/image_pipeline_torchvision.py "$tree" --workers 1 --passes 3 \
                 $([[ $cold == 1 ]] && echo --cold) | sed -n 's/^torchvision: median \([0-9.]*\).*/\1/p')
      else
        source_=${c%_*} decode=${c#*_}
        root=$([[ $source_ == shards ]] && echo "$work/shards/train" || echo "$tree")
        rate=$("$bin" "$root" --workers 1 --passes 3 --source "$source_" --decode "$decode" --cold "$cold" |
               sed -n 's/^ringtrain: median \([0-9.]*\).*/\1/p')
      fi
      echo "repetition $r: $cache $c $rate images/s" >&2
      rates[$cache.$c]+="$rate "
    done
  done
done
echo "$images JPEGs of 500x375 (quality 90), $(ls "$work/shards/train" | grep -c '\.tar$') shards of at most $shard_mb MiB;"
echo "decode + random resized crop 224 + flip + normalise, 1 worker, images/s, median of $reps runs of 3 passes:"
for cache in warm cold; do
  line="$cache:"
  for c in "${configs[@]}"; do
    m=$(median_of ${rates[$cache.$c]})
    declare "m_${cache}_$c=$m"
    line+=" $c $m,"
  done
  echo "${line%,}"
done
for cache in warm cold; do
  awk -v c="$cache" -v fw="$(eval echo \$m_${cache}_folder_whole)" -v fr="$(eval echo \$m_${cache}_folder_region)" \
      -v sw="$(eval echo \$m_${cache}_shards_whole)" -v sr="$(eval echo \$m_${cache}_shards_region)" \
      -v tv="$(eval echo \$m_${cache}_torchvision)" 'BEGIN {
    printf "%s: shards / folder %.2fx (whole decode) %.2fx (crop region); crop region / whole %.2fx (folder) %.2fx (shards); shards with crop region / torchvision %.2fx\n",
           c, sw / fw, sr / fr, fr / fw, sr / sw, sr / tv }'
done
