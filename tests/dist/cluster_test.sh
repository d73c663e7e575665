#!/usr/bin/env bash
# Several hosts: 2 "hosts" x 2 ranks in network namespaces joined by veth (real TCP between the
# hosts, shared memory within each), training LeNet for one epoch (4 steps) on a Fashion-MNIST
# subset; the checkpoint must equal the one from 4 ranks on one host, tensor by tensor: bit for bit
# with the flat ring over its own TCP connections (what dist.transport = "auto" picks for it:
# shared memory cannot span hosts) and over MPI point-to-point, and to the rounding of sums formed
# in another order with the two-level ring (what dist.hierarchy = "auto" picks across hosts; TCP
# between them, and MPI point-to-point). Creates and removes its own namespaces.
# usage: cluster_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
source "$src/tests/support/netns_link.sh"
require_fashion_mnist
require_netns
work=$(mktemp -d /tmp/ringtrain_cluster_XXXXXX)
trap '"$src/scripts/netns_hosts.sh" down; rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh  # Open MPI or MPICH, as configured
"$src/scripts/netns_hosts.sh" up || exit 1

# A subset: 512 training and 256 test images, as IDX files.
fashion_mnist_subset "$work/data" 512 256 || exit 1

common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=1 --set train.threads=1
        --set train.batch_per_rank=32 --set log.progress=none "${subset_data[@]}")
"$launch" --testing -np 4 "$ringtrain" "${common[@]}" \
  --set checkpoint.dir="$work/one_host" > "$work/one.out" 2>&1 || { echo "FAIL: single-host run"; cat "$work/one.out"; exit 1; }
# name:settings
runs=("two_level:" "two_level_mpi:--set dist.transport=mpi" "flat:--set dist.hierarchy=flat"
      "flat_mpi:--set dist.hierarchy=flat --set dist.transport=mpi")
for run in "${runs[@]}"; do
  name=${run%%:*}
  read -r -a extra <<< "${run#*:}"
  timeout 240 "$src/scripts/netns_hosts.sh" on rt-a "$launch" --testing --hosts rt-a:2,rt-b:2 -np 4 \
    --rsh "$("$src/scripts/netns_hosts.sh" agent)" --net 10.213.0.0/24 "$ringtrain" "${common[@]}" "${extra[@]}" \
    --set checkpoint.dir="$work/$name" > "$work/$name.out" 2>&1 || { echo "FAIL: two-host run $name"; cat "$work/$name.out"; exit 1; }
done
expect() {  # expect RUN TEXT
  grep -qF "$2" "$work/$1.out" || { echo "FAIL: $1 does not say '$2'"; cat "$work/$1.out"; exit 1; }
}
expect one "ring over shared memory"
expect two_level "world 4 rank(s)"
expect two_level "two-level ring (2 hosts x 2 ranks: shared memory inside a host, TCP between hosts)"
expect two_level_mpi "two-level ring (2 hosts x 2 ranks: shared memory inside a host, MPI point-to-point between hosts)"
expect flat "ring over TCP"
expect flat_mpi "ring over MPI point-to-point"
# The flat ring runs the same schedule across hosts as on one: bit for bit. The two-level ring sums
# in another order: within rounding.
for run in flat flat_mpi; do
  python3 "$src/tests/support/same_tensors.py" "$work/one_host/checkpoint.safetensors" "$work/$run/checkpoint.safetensors" ||
    { echo "FAIL: the flat ring across hosts ($run) differs from one host"; exit 1; }
done
python3 "$src/tests/support/close_tensors.py" 1e-5 "$work/one_host/checkpoint.safetensors" \
  "$work"/{two_level,two_level_mpi}/checkpoint.safetensors || { echo "FAIL: checkpoints differ"; exit 1; }
echo "PASS: 2 hosts x 2 ranks train as 1 host x 4 does, with the two-level ring and the flat one, over TCP and MPI"
