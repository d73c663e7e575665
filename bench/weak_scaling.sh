#!/usr/bin/env bash
# Weak scaling on one host: 1 rank x 1 thread against 2 ranks x 1 thread, same per-rank batch,
# synthetic data (ringtrain bench), and what each part of the design buys: the 2-rank run with
# ringtrain's defaults (ring over shared memory, 25 MiB buckets, overlap, SGD sharded across
# ranks), with every rank running the whole SGD after the allreduce, with the ring over MPI
# point-to-point, with overlap off, with one collective per tensor (bucket_mb = 0), and with
# MPI_Allreduce; and, as the ceiling no communication scheme can beat, two independent 1-rank
# runs at once, one per core (they share only the machine: memory bandwidth, caches, noise).
# The configurations alternate within each repetition so the machine's noise hits them alike,
# and the 1-rank run opens and closes each repetition: efficiency = total images/s of 2 ranks /
# (2 x the mean of that repetition's two 1-rank figures), taken within each repetition (the
# machine drifts between them); the table prints the medians over repetitions, and the lowest
# and highest efficiency seen.
#   bench/weak_scaling.sh [MODEL] [IMAGE_SIZE] [REPS]      (defaults: resnet50 112 3)
# RT_MPIRUN replaces the 2-rank launcher (scripts/mpi_launch.sh, Open MPI or MPICH), e.g. across
# the namespace hosts of scripts/netns_hosts.sh:
#   RT_MPIRUN="scripts/netns_hosts.sh on rt-a scripts/mpi_launch.sh --hosts rt-a:1,rt-b:1 -np 2
#   --rsh /tmp/ringtrain_netns_rsh --net 10.213.0.0/24" bench/weak_scaling.sh
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-resnet50} size=${2:-112} reps=${3:-3}
bin=./build/ringtrain
[[ -x $bin ]] || { echo "weak_scaling: build ringtrain first ($bin)" >&2; exit 1; }
mpirun=(scripts/mpi_launch.sh -np 2 --bind-to core)
if [[ -n ${RT_MPIRUN:-} ]]; then read -r -a mpirun <<< "$RT_MPIRUN"; fi
common=(bench --config configs/cpu/resnet101.toml --set "model.name=$model" --set "data.image_size=$size"
        --set train.threads=1 --set bench.warmup_steps=3 --set bench.windows=5 --set bench.steps_per_window=3)

total() { grep -o '"images_per_s":[0-9.]*' | head -1 | cut -d: -f2; }
declare -A runs
names=("1 rank" "2 x 1 rank, no communication" "2 ranks" "2 ranks, SGD not sharded" "2 ranks, ring over MPI p2p"
       "2 ranks, overlap off" "2 ranks, bucket_mb 0" "2 ranks, MPI_Allreduce")
# Two independent single-rank runs, each pinned to its own core, started together: their sum.
side_by_side() {
  local a b
  a=$(mktemp) b=$(mktemp)
  taskset -c 0 "$bin" "${common[@]}" > "$a" &
  taskset -c 1 "$bin" "${common[@]}" > "$b"
  wait
  awk -v x="$(total < "$a")" -v y="$(total < "$b")" 'BEGIN {print x + y}'
  rm -f "$a" "$b"
}
for ((r = 1; r <= reps; r++)); do
  opening=$("$bin" "${common[@]}" | total)
  runs["2 x 1 rank, no communication"]+=" $(side_by_side)"
  runs["2 ranks"]+=" $("${mpirun[@]}" "$bin" "${common[@]}" | total)"
  runs["2 ranks, SGD not sharded"]+=" $("${mpirun[@]}" "$bin" "${common[@]}" --set dist.sharded_update=false | total)"
  runs["2 ranks, ring over MPI p2p"]+=" $("${mpirun[@]}" "$bin" "${common[@]}" --set dist.transport=mpi | total)"
  runs["2 ranks, overlap off"]+=" $("${mpirun[@]}" "$bin" "${common[@]}" --set dist.overlap=false | total)"
  runs["2 ranks, bucket_mb 0"]+=" $("${mpirun[@]}" "$bin" "${common[@]}" --set dist.bucket_mb=0 | total)"
  runs["2 ranks, MPI_Allreduce"]+=" $("${mpirun[@]}" "$bin" "${common[@]}" --set dist.allreduce=mpi | total)"
  closing=$("$bin" "${common[@]}" | total)
  runs["1 rank"]+=" $(awk -v a="$opening" -v b="$closing" 'BEGIN {print (a + b) / 2}')"
  echo "repetition $r/$reps done" >&2
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
echo "weak scaling, $model at ${size}x${size}, batch 8 per rank, 1 thread per rank, median of $reps repetitions"
echo "2-rank launcher: ${mpirun[*]}"
printf '| %-30s | %8s | %10s | %13s |\n' run "img/s" efficiency "lowest-highest"
printf '|%s|%s|%s|%s|\n' "--------------------------------" "----------" "------------" "---------------"
read -r -a ones <<< "${runs["1 rank"]}"
for n in "${names[@]}"; do
  read -r -a these <<< "${runs[$n]}"
  ranks=${n%% *}
  effs=""
  for ((i = 0; i < ${#these[@]}; i++)); do
    effs+=" $(awk -v m="${these[$i]}" -v o="${ones[$i]}" -v p="$ranks" 'BEGIN {print 100 * m / (p * o)}')"
  done
  lo=$(echo "$effs" | tr ' ' '\n' | grep . | sort -g | head -1)
  hi=$(echo "$effs" | tr ' ' '\n' | grep . | sort -g | tail -1)
  printf '| %-30s | %8.3f | %9.1f%% | %5.1f-%5.1f%% |\n' "$n" "$(echo "${runs[$n]}" | median)" "$(echo "$effs" | median)" "$lo" "$hi"
done
