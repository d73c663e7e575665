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
require_fashion_mnist
command -v ip > /dev/null || { echo "SKIP: no ip command (iproute2)"; exit 77; }
if ! ip netns add rt-probe 2> /dev/null; then echo "SKIP: cannot create network namespaces (needs root / CAP_NET_ADMIN)"; exit 77; fi
ip netns del rt-probe
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
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.threads=1
        --set train.batch_per_rank=32 --set log.progress=none --set log.every_steps=1 --set dist.stall_abort_s=15
        "${subset_data[@]}")
fail=0
# run NAME EPOCHS DOWN_S: the step, its link down for DOWN_S seconds (0: for good) once step 20 is
# logged; sets rc and after_cut (seconds from the cut to srun's exit).
run() {
  local name=$1 epochs=$2 down_s=$3
  timeout 300 "$hosts" on rt-a env SLURM_CONF="$SLURM_CONF" srun --mpi=$plugin -N 2 --ntasks-per-node=2 \
    "$ringtrain" "${common[@]}" --set train.epochs="$epochs" --set checkpoint.dir="$work/$name" > "$work/$name.log" 2>&1 &
  local job=$! cut
  for _ in $(seq 3000); do grep -qs '"step":20,' "$work/$name/metrics.jsonl" && break; sleep 0.02; done
  cut=$(date +%s.%N)
  ip -n rt-a link set rt-veth-a down
  if [[ $down_s -gt 0 ]]; then sleep "$down_s"; ip -n rt-a link set rt-veth-a up; fi
  wait "$job"
  rc=$?
  after_cut=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$cut" "$(date +%s.%N)")
}
said() { grep -Ev "^#|^\[|^[a-z_0-9]+ *=" "$1"; }

run flap 4 2
if [[ $rc -eq 0 ]] && grep -q "^done: test top-1" "$work/flap.log"; then
  echo "PASS: srun, link down for 2 s after step 20: the step trained to its end"
else
  echo "FAIL: srun, link down for 2 s after step 20: exit $rc, the step should have finished"
  said "$work/flap.log" | tail -20; fail=1
fi

run cut 20 0
sleep 15
left=$(pgrep -fa "$work/cut" | grep -v pgrep)
if [[ $rc -ne 0 && $rc -ne 124 ]] && python3 -c "import sys; sys.exit(float(sys.argv[1]) > 45)" "$after_cut" &&
   said "$work/cut.log" | grep -q "rt-b" && [[ -z $left ]]; then
  echo "PASS: srun, link cut after step 20: exited $rc, $after_cut s after the cut, naming rt-b; nothing left"
  said "$work/cut.log" | grep -m1 "rt-b" | sed 's/^/    /'
else
  echo "FAIL: srun, link cut after step 20: exit $rc, $after_cut s after the cut (at most 45 s, non-zero, naming" \
       "rt-b, nothing left); left: ${left:-nothing}"
  said "$work/cut.log" | tail -20; fail=1
fi
exit $fail
