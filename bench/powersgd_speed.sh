#!/usr/bin/env bash
# PowerSGD's speed where bandwidth bounds the step: VGG-16 at 32 x 32 (it keeps its 25088 x 4096
# layer: 138 M gradients a step), 2 ranks of 1 thread, `ringtrain bench`, plain averaging and
# dist.compression = "powersgd" (rank RANK, default 4, from the first step) alternated, REPEATS
# times each (default 3), on each LAYOUT (default "1gbit one_host"):
#   RATE      one rank on each namespace host of scripts/netns_hosts.sh, the link shaped to RATE
#             (as tests/dist/straggler_link_test.sh shapes it);
#   one_host  both ranks on this host over shared memory, where averaging is cheap and the
#             compression's products are its whole cost.
# Prints one row per run (images/s, seconds a step) and, per layout, the medians and their ratio.
# Needs root (network namespaces, tc) for the shaped layouts.
# usage: bench/powersgd_speed.sh [OUT]     (default runs/powersgd_speed)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/powersgd_speed} rank=${RANK:-4} repeats=${REPEATS:-3} layouts=${LAYOUTS:-1gbit one_host}
bin=$PWD/build/ringtrain
[[ -x $bin ]] || { echo "powersgd_speed: build ringtrain first ($bin)" >&2; exit 1; }
mkdir -p "$out"
trap 'bash scripts/netns_hosts.sh down > /dev/null 2>&1 || true' EXIT
common=(bench --config configs/cpu/vgg16.toml --set data.image_size=32
        --set train.batch_per_rank=4 --set train.threads=1 --set bench.warmup_steps=2 --set bench.windows=3
        --set bench.steps_per_window=2)
compressed=(--set dist.compression=powersgd --set dist.powersgd_rank="$rank" --set dist.powersgd_start_step=0)
run() {  # run LAYOUT ARM: one bench job's images/s
  local layout=$1 arm=$2 args=("${common[@]}")
  [[ $arm == powersgd ]] && args+=("${compressed[@]}")
  if [[ $layout == one_host ]]; then
    scripts/mpi_launch.sh --bind-to none -np 2 "$bin" "${args[@]}"
  else
    bash scripts/netns_hosts.sh on rt-a scripts/mpi_launch.sh --bind-to none --hosts rt-a:1,rt-b:1 -np 2 \
      --rsh "$(bash scripts/netns_hosts.sh agent)" --net 10.213.0.0/24 "$bin" "${args[@]}"
  fi > "$out/${layout}_${arm}.log" 2>&1
  grep -o '"images_per_s":[0-9.]*' "$out/${layout}_${arm}.log" | head -1 | cut -d: -f2
}
median() { sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf '%-9s %-9s %4s %12s %10s\n' layout arm run images/s s/step | tee "$out/speed.txt"
for layout in $layouts; do
  if [[ $layout != one_host ]]; then bash scripts/netns_hosts.sh up "$layout" > /dev/null; fi
  : > "$out/${layout}_plain.ips"
  : > "$out/${layout}_powersgd.ips"
  for ((k = 1; k <= repeats; k++)); do
    for arm in plain powersgd; do
      ips=$(run "$layout" "$arm")
      echo "$ips" >> "$out/${layout}_${arm}.ips"
      printf '%-9s %-9s %4d %12.3f %10.3f\n' "$layout" "$arm" "$k" "$ips" "$(awk -v i="$ips" 'BEGIN {print 8 / i}')" |
        tee -a "$out/speed.txt"
    done
  done
  plain=$(median < "$out/${layout}_plain.ips") powersgd=$(median < "$out/${layout}_powersgd.ips")
  printf '%-9s medians: plain %.3f, powersgd %.3f images/s: powersgd / plain = %.2f\n' "$layout" "$plain" "$powersgd" \
    "$(awk -v a="$powersgd" -v b="$plain" 'BEGIN {print a / b}')" | tee -a "$out/speed.txt"
  if [[ $layout != one_host ]]; then bash scripts/netns_hosts.sh down > /dev/null; fi
done
