#!/usr/bin/env bash
# The flat ring against the two-level ring (Note [Two-level ring]) across the namespace hosts of
# scripts/netns_hosts.sh, 2 hosts x 2 ranks, with the link unshaped and shaped to each rate:
# allreduce_bench's busbw and the bytes that crossed the veth link per reduced byte, beside
# Open MPI's or MPICH's MPI_Allreduce. Needs root (network namespaces, tc).
#   bench/two_level_allreduce.sh [--rates "none 1gbit"] [--max-bytes 67108864] [--reps 5] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
rates="none 1gbit" max_bytes=67108864 reps=5 out=runs/two_level
while [ $# -gt 0 ]; do
  case "$1" in
    --rates) rates=$2; shift 2 ;;
    --max-bytes) max_bytes=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "two_level_allreduce.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
bin=$PWD/build/bench/allreduce_bench
[[ -x $bin ]] || { echo "two_level_allreduce: build allreduce_bench first ($bin)" >&2; exit 1; }
mkdir -p "$out"
trap 'bash scripts/netns_hosts.sh down > /dev/null 2>&1 || true' EXIT
for rate in $rates; do
  if [[ $rate == none ]]; then bash scripts/netns_hosts.sh up > /dev/null; else bash scripts/netns_hosts.sh up "$rate" > /dev/null; fi
  echo "# link: ${rate/none/unshaped}" | tee "$out/allreduce_$rate.txt"
  # --bind-to none: each "host" would otherwise bind its ranks from core 0, the same cores.
  bash scripts/netns_hosts.sh on rt-a scripts/mpi_launch.sh --bind-to none --hosts rt-a:2,rt-b:2 -np 4 \
    --rsh "$(bash scripts/netns_hosts.sh agent)" --net 10.213.0.0/24 "$bin" --min-bytes 65536 \
    --max-bytes "$max_bytes" --reps "$reps" --only ring_tcp,ring_2lvl,mpi --link rt-veth-a,rt-veth-b |
    tee -a "$out/allreduce_$rate.txt"
  bash scripts/netns_hosts.sh down > /dev/null
done
echo "wrote $out/allreduce_*.txt"
