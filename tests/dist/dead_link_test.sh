#!/usr/bin/env bash
# A dead link ends the whole job, launcher included: 2 "hosts" x 2 ranks in network namespaces
# joined by veth (scripts/netns_hosts.sh), LeNet on a Fashion-MNIST subset, dist.stall_abort_s = 15,
# started through scripts/mpi_launch.sh under the MPI this tree was built with; the two-level ring
# that dist.hierarchy = "auto" picks there.
# - rt-a's end of the link goes down for good after step 20: the launcher exits non-zero within
#   stall_abort_s + 30 s of the cut, its output names host rt-b, and no process of the job is left
#   on either host 15 s later (Open MPI's mpirun once waited about 15 minutes on the daemon it
#   could no longer reach; MPICH's ranks beyond the cut waited in MPI_Abort for good);
# - the link goes down for 2 s and comes back: the job trains to its end.
# Creates and removes its own namespaces.
# usage: dead_link_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
source "$src/tests/support/netns_link.sh"
require_fashion_mnist
require_netns
work=$(mktemp -d /tmp/ringtrain_dead_link_XXXXXX)
hosts=$src/scripts/netns_hosts.sh
trap '"$hosts" down; pkill -9 -f "$work/" 2> /dev/null; rm -rf "$work"' EXIT
fashion_mnist_subset "$work/data" 8192 256 || exit 1
job=("$hosts" on rt-a "$src/scripts/mpi_launch.sh" --testing --hosts rt-a:2,rt-b:2 -np 4
     --rsh "$("$hosts" agent)" --net 10.213.0.0/24 "$ringtrain" --config "$src/configs/fashion_mnist.toml"
     --set model.name=lenet --set train.threads=1 --set train.batch_per_rank=32 --set log.progress=none
     --set log.every_steps=1 --set dist.stall_abort_s=15 "${subset_data[@]}")
fail=0

"$hosts" up > /dev/null || exit 1
link_cut_run cut 20 0 "${job[@]}"
expect_job_ended cut "link cut after step 20" 45
"$hosts" down

"$hosts" up > /dev/null || exit 1
link_cut_run flap 4 2 "${job[@]}"
expect_job_finished flap "link down for 2 s after step 20"
"$hosts" down
exit $fail
