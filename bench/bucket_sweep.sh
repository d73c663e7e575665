#!/usr/bin/env bash
# Which gradient-bucket settings are fastest depends on the link: 2 namespace hosts x 2 ranks
# (scripts/netns_hosts.sh), `ringtrain bench` of a model under each of SETTINGS on each link SHAPE,
# the settings alternated within each repeat, then the median images/s of each and the best per
# shape. The exhaustive sweep an online tuner is judged against. Needs root (namespaces, tc).
#   SHAPES    (default "none tbf:1gbit"): none leaves the veth link as it is; tbf:RATE shapes each
#             end with a token bucket as scripts/netns_hosts.sh does; one_host runs the 4 ranks on
#             this machine, no namespaces.
#   SETTINGS  (default: flat and two-level at 1, 25 and 200 MB buckets) as "hierarchy:bucket_mb:first_bucket_mb";
#             "hierarchy:autotune:-" is a run with dist.autotune = "on" from the default caps, its
#             images/s those of the windows after the tuning, its choice printed beside them.
#   REPEATS   (default 2); CONFIG (default configs/cpu/resnet101.toml, at 32 x 32, 4 images and 1
#             thread per rank).
# usage: bench/bucket_sweep.sh [OUT]     (default runs/bucket_sweep)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/bucket_sweep} repeats=${REPEATS:-2} config=${CONFIG:-configs/cpu/resnet101.toml}
shapes=${SHAPES:-none tbf:1gbit}
settings=${SETTINGS:-flat:1:0.25 flat:25:1 flat:200:16 two_level:1:0.25 two_level:25:1 two_level:200:16}
bin=$PWD/build/ringtrain
[[ -x $bin ]] || { echo "bucket_sweep: build ringtrain first ($bin)" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.ips  # each median from this sweep's runs alone
trap 'bash scripts/netns_hosts.sh down > /dev/null 2>&1 || true' EXIT
common=(bench --config "$config" --set data.image_size=32 --set train.batch_per_rank=4 --set train.threads=1
        --set bench.warmup_steps=2 --set bench.windows=3 --set bench.steps_per_window=2)
median() { sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf '%-16s %-9s %9s %9s %4s %10s\n' shape hierarchy bucket_mb first_mb run images/s | tee "$out/sweep.txt"
for shape in $shapes; do
  case $shape in
    none) bash scripts/netns_hosts.sh up > /dev/null ;;
    tbf:*) bash scripts/netns_hosts.sh up "${shape#tbf:}" > /dev/null ;;
    one_host) ;;
    *) echo "bucket_sweep: shape '$shape': expected none, tbf:RATE or one_host" >&2; exit 2 ;;
  esac
  for ((k = 1; k <= repeats; k++)); do
    for s in $settings; do
      IFS=: read -r hierarchy cap first <<< "$s"
      log=$out/${shape//:/_}_${hierarchy}_${cap}_${first}_$k.log
      if [[ $cap == autotune ]]; then
        caps=(--set dist.autotune=on)
      else
        caps=(--set dist.bucket_mb="$cap" --set dist.first_bucket_mb="$first")
      fi
      if [[ $shape == one_host ]]; then
        launch=(scripts/mpi_launch.sh --bind-to none --oversubscribe -np 4)
      else
        launch=(bash scripts/netns_hosts.sh on rt-a scripts/mpi_launch.sh --bind-to none --hosts rt-a:2,rt-b:2 -np 4
                --rsh "$(bash scripts/netns_hosts.sh agent)" --net 10.213.0.0/24)
      fi
      "${launch[@]}" "$bin" "${common[@]}" --set dist.hierarchy="$hierarchy" "${caps[@]}" > "$log" 2>&1 ||
        { echo "bucket_sweep: the run of $s on $shape failed; see $log" >&2; exit 1; }
      ips=$(grep -o '"images_per_s":[0-9.]*' "$log" | head -1 | cut -d: -f2 || true)
      [[ -n $ips ]] || { echo "bucket_sweep: no images_per_s in $log" >&2; exit 1; }
      choice=$(grep -o 'dist.autotune [a-z]*[^:]*' "$log" | sed 's/dist.autotune //' || true)
      printf '%-16s %-9s %9s %9s %4d %10.3f %s\n' "$shape" "$hierarchy" "$cap" "$first" "$k" "$ips" "$choice" |
        tee -a "$out/sweep.txt"
      echo "$ips" >> "$out/${shape//:/_}_${hierarchy}_${cap}_${first}.ips"
    done
  done
  best="" best_ips=0
  for s in $settings; do
    IFS=: read -r hierarchy cap first <<< "$s"
    m=$(median < "$out/${shape//:/_}_${hierarchy}_${cap}_${first}.ips")
    printf '%-16s %-9s %9s %9s  median %10.3f\n' "$shape" "$hierarchy" "$cap" "$first" "$m" | tee -a "$out/sweep.txt"
    if [[ $cap == autotune ]]; then
      tuned=$m
    elif awk -v a="$m" -v b="$best_ips" 'BEGIN {exit !(a > b)}'; then
      best=$s best_ips=$m
    fi
  done
  echo "$shape: fastest fixed setting $best at $best_ips images/s" | tee -a "$out/sweep.txt"
  [[ -z ${tuned:-} ]] ||
    awk -v a="$tuned" -v b="$best_ips" -v s="$shape" \
      'BEGIN {printf "%s: autotuned %.3f images/s, %.1f%% of the fastest fixed setting\n", s, a, 100 * a / b}' |
    tee -a "$out/sweep.txt"
  tuned=""
  [[ $shape == one_host ]] || bash scripts/netns_hosts.sh down > /dev/null
done
