#!/usr/bin/env bash
# The simulator against this machine: for each model, one rank's compute profile (ringtrain bench
# --profile, 1 thread), then ringtrain bench on 2 ranks across the namespace hosts of
# scripts/netns_hosts.sh with the link shaped to each rate, beside `ringtrain simulate` for the
# same config on configs/clusters/this_machine_netns.toml at that rate. Prints one row per run:
# measured and simulated images/s and their ratio (the simulator models ringtrain's ring, not
# MPI_Allreduce: that row has no prediction). Needs root (network namespaces, tc).
#   bench/validate_simulator.sh [--models "resnet101 vgg16 inception_v3"] [--rates "1gbit 500mbit"]
#                               [--variants yes|no] [--four yes|no] [--per-host "1 2"] [--repeats N] [--out DIR]
# --variants yes adds, for each model at the first rate: MPI_Allreduce, overlap off, and one
# collective per tensor (bucket_mb = 0). --four yes adds 4 ranks, two per namespace host, at each
# rate (with the variants where the 2-rank job has them): four ranks share the two cores, so their
# compute profile is measured with four processes running at once, as in the job. At 4 ranks the
# defaults run the two-level ring (dist.hierarchy = auto), and a "flat ring" row runs the flat one.
# --per-host "2" runs only the 4-rank layout (--per-host "1 2" is --four yes). A rate of "none"
# leaves the link unshaped: measured only, as no cluster file describes it. --repeats N
# (default 3) runs each measured job N times: the row shows the median and the range, and the
# ratio is the simulated figure over the median.
set -euo pipefail
cd "$(dirname "$0")/.."
models="resnet101 vgg16 inception_v3" rates="1gbit 500mbit" variants=yes layouts="1" repeats=3 out=runs/validate
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --four) [[ $2 == yes ]] && layouts="1 2"; shift 2 ;;
    --per-host) layouts=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "validate_simulator.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
bin=$PWD/build/ringtrain
[[ -x $bin ]] || { echo "validate_simulator: build ringtrain first ($bin)" >&2; exit 1; }
mkdir -p "$out"
trap 'bash scripts/netns_hosts.sh down > /dev/null 2>&1 || true' EXIT

# Small enough for two cores: 4 images per rank, 128 px (Inception-v3 keeps its 299: its aux head
# needs it), a short bench.
settings() {
  local model=$1 size=128
  [[ $model == inception_v3 ]] && size=299
  echo --set "model.name=$model" --set train.batch_per_rank=4 --set train.threads=1 --set "data.image_size=$size" \
       --set bench.warmup_steps=1 --set bench.windows=3 --set bench.steps_per_window=3
}
images_per_s() { grep -o '"images_per_s":[0-9.]*' | head -1 | cut -d: -f2; }
simulated() { grep -v '^#' | awk -v p="${1:-2}" '$1 == p {print $7}'; }
launch() {  # launch RANKS_PER_HOST ringtrain-args...: bench across the two namespace hosts
  local per=$1
  shift
  # --bind-to none: each "host" would otherwise bind its ranks from core 0, the same cores.
  bash scripts/netns_hosts.sh on rt-a scripts/mpi_launch.sh --bind-to none --hosts "rt-a:$per,rt-b:$per" \
    -np $((2 * per)) --rsh "$(bash scripts/netns_hosts.sh agent)" --net 10.213.0.0/24 "$bin" "$@"
}

# measure RANKS_PER_HOST ringtrain-args...: "median min max" of $repeats runs' images/s.
measure() {
  local per=$1 k
  shift
  for ((k = 0; k < repeats; k++)); do launch "$per" bench "$@" | images_per_s; done |
    sort -g | awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                                      printf "%.3f %.3f %.3f\n", m, v[1], v[NR]}'
}
row() {  # row MODEL RATE RUN "MEDIAN MIN MAX" SIMULATED
  local median min max
  read -r median min max <<< "$4"
  if [[ $5 == - ]]; then
    printf '%-13s %-7s %-26s %10.3f %15s %10s %7s\n' "$1" "$2" "$3" "$median" "$min-$max" - -
  else
    printf '%-13s %-7s %-26s %10.3f %15s %10.3f %7.2f\n' "$1" "$2" "$3" "$median" "$min-$max" "$5" \
      "$(awk -v s="$5" -v m="$median" 'BEGIN {print s / m}')"
  fi
}

{
  echo "# $repeats run(s) per row: median images/s of the job, and the range"
  printf '%-13s %-7s %-26s %10s %15s %10s %7s\n' model rate run measured range simulated "sim/meas"
} | tee "$out/validation.txt"
for model in $models; do
  read -r -a set <<< "$(settings "$model")"
  # Profiles average twice the job's steps: their noise goes straight into the prediction.
  "$bin" bench --config configs/cpu/resnet101.toml "${set[@]}" --set bench.windows=6 --profile "$out/$model.profile" \
    > "$out/$model.profile.log"
  if [[ " $layouts " == *" 2 "* ]]; then
    # Four processes at once on the two cores, as four ranks will be; three keep running (more
    # windows) while the fourth takes its profile.
    for k in 1 2 3; do
      "$bin" bench --config configs/cpu/resnet101.toml "${set[@]}" --set bench.windows=12 > /dev/null &
    done
    "$bin" bench --config configs/cpu/resnet101.toml "${set[@]}" --set bench.windows=6 --profile "$out/$model.profile4" \
      > /dev/null
    wait
  fi
  for rate in $rates; do
    if [[ $rate == none ]]; then bash scripts/netns_hosts.sh up > /dev/null; else bash scripts/netns_hosts.sh up "$rate" > /dev/null; fi
    gbit=$(echo "$rate" | awk '/mbit$/ {print $0 / 1000; next} {print $0 + 0}')
    sed "/\[inter_host\]/,/gbit_per_s/ s/^gbit_per_s = .*/gbit_per_s = $gbit/" configs/clusters/this_machine_netns.toml \
      > "$out/cluster_2_$rate.toml"
    sed 's/^ranks_per_host = .*/ranks_per_host = 2/' "$out/cluster_2_$rate.toml" > "$out/cluster_4_$rate.toml"
    runs=("defaults:")
    if [[ $variants == yes && $rate == "${rates%% *}" ]]; then
      runs+=("MPI_Allreduce:--set dist.allreduce=mpi" "overlap off:--set dist.overlap=false"
             "bucket_mb 0:--set dist.bucket_mb=0")
    fi
    for per in $layouts; do
      ranks=$((2 * per))
      profile=$out/$model.profile
      ((ranks == 4)) && profile=$out/$model.profile4
      per_runs=("${runs[@]}")
      ((per > 1)) && per_runs+=("flat ring:--set dist.hierarchy=flat")
      for run in "${per_runs[@]}"; do
        name="$ranks ranks, ${run%%:*}"
        read -r -a extra <<< "${run#*:}"
        measured=$(measure "$per" --config configs/cpu/resnet101.toml "${set[@]}" "${extra[@]}")
        # The simulator models ringtrain's ring; MPI_Allreduce's own algorithm it does not.
        sim=-
        if [[ $name != *MPI_Allreduce && $rate != none ]]; then
          sim=$("$bin" simulate --config configs/cpu/resnet101.toml "${set[@]}" "${extra[@]}" --ranks "1,$ranks" \
                  --network "$out/cluster_${ranks}_$rate.toml" --profile "$profile" | simulated "$ranks")
        fi
        row "$model" "$rate" "$name" "$measured" "$sim" | tee -a "$out/validation.txt"
      done
    done
    bash scripts/netns_hosts.sh down > /dev/null
  done
done
echo "wrote $out/validation.txt"
