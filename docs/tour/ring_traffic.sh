#!/usr/bin/env bash
# Chapter 3's figure, from real runs of `ringtrain ring-demo`: the numbers that cross the busiest
# link in one allreduce of N = 24 numbers on P = 2..8 ranks, for the ring (the busiest rank's sent
# plus received, as ring-demo counts them) beside one parameter server that receives P buffers and
# sends P back (2 P N).
#   docs/tour/ring_traffic.sh [RINGTRAIN] [OUT_DIR]     (defaults: ./build/ringtrain runs/tour)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-./build/ringtrain} out=${2:-runs/tour} n=24
mkdir -p "$out"
for p in 2 3 4 5 6 7 8; do
  # "sent: rank 0 10, rank 1 9, ... elements; ...": the busiest rank's count; it receives as much.
  busiest=$("$bin" ring-demo --ranks "$p" --elements "$n" | grep '^sent:' | grep -o 'rank [0-9]* [0-9]*' |
            awk '{print $3}' | sort -n | tail -1)
  echo "$p $((2 * busiest)) $((2 * p * n))"
done > "$out/ring_traffic.dat"
gnuplot <<GP
set terminal pngcairo size 800,500 font ",11"
set output "$out/ring_traffic.png"
set title "One allreduce of N = $n numbers: what crosses the busiest link"
set xlabel "ranks P"
set ylabel "numbers sent + received"
set key top left
set grid
set xrange [1.5:8.5]
set yrange [0:*]
plot "$out/ring_traffic.dat" using 1:3 with linespoints pointtype 5 title "parameter server (2 P N)", \
     "" using 1:2 with linespoints pointtype 7 title "ring, busiest rank (ring-demo)", \
     4 * $n with lines dashtype 2 title "4 N: the ring's bound"
GP
cat "$out/ring_traffic.dat"
echo "wrote $out/ring_traffic.png"
