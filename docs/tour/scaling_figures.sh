#!/usr/bin/env bash
# Chapter 5's figures, from runs of `ringtrain simulate`:
#  scaling_paper.png     efficiency against GPUs for the paper's three models on the paper's
#                        cluster with Horovod's settings of the time, beside the paper's figures;
#  scaling_bandwidth.png efficiency at 128 GPUs against the bandwidth between servers, with
#                        ringtrain's defaults, for the three models.
#   docs/tour/scaling_figures.sh [RINGTRAIN] [OUT_DIR]     (defaults: ./build/ringtrain runs/tour)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-./build/ringtrain} out=${2:-runs/tour}
mkdir -p "$out"
cluster=configs/clusters/horovod_paper.toml
horovod=(--cycle-ms 5 --set dist.bucket_mb=64 --set dist.first_bucket_mb=64)
ranks=1,2,4,8,16,32,64,128,256,512
for model in inception_v3 resnet101 vgg16; do
  "$bin" simulate --config "configs/$model.toml" --ranks "$ranks" --network "$cluster" "${horovod[@]}" |
    grep -v '^#' | awk '{print $1, $9}' > "$out/scaling_$model.dat"
  # Efficiency at 128 GPUs as the inter-server link goes from 1 to 100 Gbit/s, ringtrain's defaults.
  for gbit in 1 2 5 10 25 50 100; do
    sed "/\[inter_host\]/,/gbit_per_s/ s/^gbit_per_s = .*/gbit_per_s = $gbit/" "$cluster" > "$out/cluster_$gbit.toml"
    echo "$gbit $("$bin" simulate --config "configs/$model.toml" --ranks 128 --network "$out/cluster_$gbit.toml" |
                  grep -v '^#' | awk '{print $9}')"
    rm "$out/cluster_$gbit.toml"
  done > "$out/bandwidth_$model.dat"
done
# The Horovod paper's figures (Sergeev & Del Balso, 2018): 16 GPUs over RDMA, 128 and 512 GPUs.
printf '16 0.9375\n128 0.90\n512 0.90\n' > "$out/paper_inception_v3.dat"
printf '16 0.9125\n128 0.90\n512 0.90\n' > "$out/paper_resnet101.dat"
printf '16 0.85625\n128 0.79\n512 0.68\n' > "$out/paper_vgg16.dat"
gnuplot <<GP
set terminal pngcairo size 900,520 font ",11"
set output "$out/scaling_paper.png"
set title "The Horovod paper's cluster (4 GPUs per server, 25 Gbit/s), Horovod's 2017 fusion: simulated vs the paper"
set xlabel "GPUs"
set ylabel "scaling efficiency"
set logscale x 2
set yrange [0.5:1.02]
set key bottom left
set grid
plot "$out/scaling_inception_v3.dat" with lines lw 2 lc rgb "#1b9e77" title "Inception V3, simulated", \
     "$out/paper_inception_v3.dat" with points pt 7 ps 1.5 lc rgb "#1b9e77" title "Inception V3, paper", \
     "$out/scaling_resnet101.dat" with lines lw 2 lc rgb "#d95f02" title "ResNet-101, simulated", \
     "$out/paper_resnet101.dat" with points pt 5 ps 1.5 lc rgb "#d95f02" title "ResNet-101, paper", \
     "$out/scaling_vgg16.dat" with lines lw 2 lc rgb "#7570b3" title "VGG-16, simulated", \
     "$out/paper_vgg16.dat" with points pt 9 ps 1.5 lc rgb "#7570b3" title "VGG-16, paper"
set output "$out/scaling_bandwidth.png"
set title "128 GPUs, ringtrain's defaults: efficiency against the bandwidth between servers (simulated)"
set xlabel "Gbit/s between servers"
set logscale x 10
set yrange [0:1.02]
set key bottom right
plot "$out/bandwidth_inception_v3.dat" with linespoints lw 2 pt 7 title "Inception V3 (109 MB of gradients)", \
     "$out/bandwidth_resnet101.dat" with linespoints lw 2 pt 5 title "ResNet-101 (178 MB)", \
     "$out/bandwidth_vgg16.dat" with linespoints lw 2 pt 9 title "VGG-16 (553 MB)"
GP
for model in inception_v3 resnet101 vgg16; do echo "$model: $(tr '\n' ' ' < "$out/bandwidth_$model.dat")"; done
echo "wrote $out/scaling_paper.png and $out/scaling_bandwidth.png"
