#!/usr/bin/env bash
# The simulator against this machine: for each model, one rank's compute profile (ringtrain bench
# --profile, 1 thread), then ringtrain bench on 2 ranks across the namespace hosts of
# scripts/netns_hosts.sh with the link shaped to each rate, beside `ringtrain simulate` for the
# same config on configs/clusters/this_machine_netns.toml at that rate. Prints one row per run:
# measured and simulated images/s and their ratio (the simulator models ringtrain's ring, not
# MPI_Allreduce: that row has no prediction). Needs root (network namespaces, tc).
#   bench/validate_simulator.sh [--models "resnet101 vgg16 inception_v3"] [--rates "1gbit 500mbit"]
#                               [--variants yes|no] [--four yes|no] [--out DIR]
# --variants yes adds, for the first model at the first rate: MPI_Allreduce, overlap off, and one
# collective per tensor (bucket_mb = 0). --four yes adds 4 ranks, two per namespace host, at each
# rate: four ranks share the two cores, so their compute profile is measured with four processes
# running at once, as in the job.
set -euo pipefail
cd "$(dirname "$0")/.."
models="resnet101 vgg16 inception_v3" rates="1gbit 500mbit" variants=yes four=no out=runs/validate
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --four) four=$2; shift 2 ;;
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
  ip netns exec rt-a mpirun --allow-run-as-root --bind-to none -H "rt-a:$per,rt-b:$per" -np $((2 * per)) \
    --mca plm_rsh_agent "$(bash scripts/netns_hosts.sh agent)" --mca btl self,vader,tcp \
    --mca btl_tcp_if_include 10.213.0.0/24 --mca oob_tcp_if_include 10.213.0.0/24 "$bin" "$@"
}

printf '%-13s %-7s %-22s %10s %10s %7s\n' model rate run measured simulated "sim/meas" | tee "$out/validation.txt"
for model in $models; do
  read -r -a set <<< "$(settings "$model")"
  "$bin" bench --config configs/cpu/resnet101.toml "${set[@]}" --profile "$out/$model.profile" > "$out/$model.profile.log"
  if [[ $four == yes ]]; then
    # Four processes at once on the two cores, as four ranks will be; three keep running (more
    # windows) while the fourth takes its profile.
    for k in 1 2 3; do
      "$bin" bench --config configs/cpu/resnet101.toml "${set[@]}" --set bench.windows=6 > /dev/null &
    done
    "$bin" bench --config configs/cpu/resnet101.toml "${set[@]}" --profile "$out/$model.profile4" > /dev/null
    wait
  fi
  for rate in $rates; do
    bash scripts/netns_hosts.sh up "$rate" > /dev/null
    gbit=$(echo "$rate" | awk '/mbit$/ {print $0 / 1000; next} {print $0 + 0}')
    sed "/\[inter_host\]/,/gbit_per_s/ s/^gbit_per_s = .*/gbit_per_s = $gbit/" configs/clusters/this_machine_netns.toml \
      > "$out/cluster_$rate.toml"
    runs=("default:")
    if [[ $variants == yes && $model == "${models%% *}" && $rate == "${rates%% *}" ]]; then
      runs+=("mpi:--set dist.allreduce=mpi" "overlap-off:--set dist.overlap=false" "bucket_mb-0:--set dist.bucket_mb=0")
    fi
    for run in "${runs[@]}"; do
      name=${run%%:*}
      read -r -a extra <<< "${run#*:}"
      measured=$(launch 1 bench --config configs/cpu/resnet101.toml "${set[@]}" "${extra[@]}" | images_per_s)
      # The simulator models ringtrain's ring; MPI_Allreduce's own algorithm it does not.
      if [[ $name == mpi ]]; then
        printf '%-13s %-7s %-22s %10.3f %10s %7s\n' "$model" "$rate" "$name" "$measured" - - | tee -a "$out/validation.txt"
        continue
      fi
      sim=$("$bin" simulate --config configs/cpu/resnet101.toml "${set[@]}" "${extra[@]}" --ranks 1,2 \
              --network "$out/cluster_$rate.toml" --profile "$out/$model.profile" | simulated)
      printf '%-13s %-7s %-22s %10.3f %10.3f %7.2f\n' "$model" "$rate" "$name" "$measured" "$sim" \
        "$(awk -v s="$sim" -v m="$measured" 'BEGIN {print s / m}')" | tee -a "$out/validation.txt"
    done
    if [[ $four == yes ]]; then
      sed 's/^ranks_per_host = .*/ranks_per_host = 2/' "$out/cluster_$rate.toml" > "$out/cluster4_$rate.toml"
      measured=$(launch 2 bench --config configs/cpu/resnet101.toml "${set[@]}" | images_per_s)
      sim=$("$bin" simulate --config configs/cpu/resnet101.toml "${set[@]}" --ranks 1,4 \
              --network "$out/cluster4_$rate.toml" --profile "$out/$model.profile4" | simulated 4)
      printf '%-13s %-7s %-22s %10.3f %10.3f %7.2f\n' "$model" "$rate" "4 ranks, 2 per host" "$measured" "$sim" \
        "$(awk -v s="$sim" -v m="$measured" 'BEGIN {print s / m}')" | tee -a "$out/validation.txt"
    fi
    bash scripts/netns_hosts.sh down > /dev/null
  done
done
echo "wrote $out/validation.txt"
