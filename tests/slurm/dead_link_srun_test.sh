#!/usr/bin/env bash
# A dead link ends a Slurm job step, srun included: two Slurm nodes on network-namespace hosts
# (tests/slurm/netns_slurm.sh over scripts/netns_hosts.sh), srun --mpi=pmix (pmi2 for an MPICH
# build) -N 2 --ntasks-per-node=2, LeNet on a Fashion-MNIST subset, dist.stall_abort_s = 15.
# - the link goes down for 2 s after step 20 and comes back: the step trains to its end;
# - rt-a's end goes down for good after step 20: srun exits non-zero within stall_abort_s + 30 s
#   of the cut, its output names host rt-b, and no rank is left 15 s later.
# usage: dead_link_srun_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
source "$src/tests/support/netns_link.sh"
require_fashion_mnist
require_netns
work=$(mktemp -d /tmp/ringtrain_dead_link_srun_XXXXXX)
chmod 755 "$work"  # munged's socket lies below it
hosts=$src/scripts/netns_hosts.sh cluster=$src/tests/slurm/netns_slurm.sh
trap '"$cluster" down "$work/slurm"; "$hosts" down; pkill -9 -f "$work/" 2> /dev/null; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
"$hosts" up > /dev/null || exit 1
"$cluster" up "$work/slurm" || exit $?
export SLURM_CONF=$work/slurm/slurm.conf
plugin=pmix
[[ ${RINGTRAIN_MPI:-openmpi} == mpich ]] && plugin=pmi2
fashion_mnist_subset "$work/data" 8192 256 || exit 1
job=("$hosts" on rt-a env SLURM_CONF="$SLURM_CONF" srun --mpi=$plugin -N 2 --ntasks-per-node=2 "$ringtrain"
     --config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.threads=1
     --set train.batch_per_rank=32 --set log.progress=none --set log.every_steps=1 --set dist.stall_abort_s=15
     "${subset_data[@]}")
fail=0
link_cut_run flap 4 2 "${job[@]}"
expect_job_finished flap "srun, link down for 2 s after step 20"
link_cut_run cut 20 0 "${job[@]}"
expect_job_ended cut "srun, link cut after step 20" 45
exit $fail
