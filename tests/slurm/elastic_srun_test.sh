#!/usr/bin/env bash
# docs/examples/ringtrain_elastic.sbatch loses a node and finishes on the other: two Slurm nodes on
# network-namespace hosts (tests/slurm/netns_slurm.sh over scripts/netns_hosts.sh), the example
# submitted with sbatch --nodes=2 --ntasks-per-node=2, LeNet on a Fashion-MNIST subset at a fixed
# global batch of 64, saving every 10 steps. Once step 30 is logged, every process of node rt-b
# but its slurmd (the job's step daemon and its ranks) is killed, and every one that starts there
# after it, until the job runs again: `ringtrain elastic --slurm` must name rt-b, run it with srun --exclude=rt-b
# at 2 ranks on rt-a, and the job must train every epoch to the end. (rt-b's slurmd is spared so
# that the allocation can end at once: a node whose daemon is gone holds the job until Slurm's
# SlurmdTimeout.)
# usage: elastic_srun_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
source "$src/tests/support/netns_link.sh"
source "$src/tests/slurm/slurm_jobs.sh"
require_fashion_mnist
require_netns
work=$(mktemp -d /tmp/ringtrain_elastic_srun_XXXXXX)
chmod 755 "$work"  # munged's socket lies below it
hosts=$src/scripts/netns_hosts.sh cluster=$src/tests/slurm/netns_slurm.sh
killer=
trap '[[ -n $killer ]] && kill "$killer"; "$cluster" down "$work/slurm"; "$hosts" down; pkill -9 -f "$work/" 2> /dev/null; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
"$hosts" up > /dev/null || exit 1
"$cluster" up "$work/slurm" || exit $?
export SLURM_CONF=$work/slurm/slurm.conf
plugin=pmix
[[ ${RINGTRAIN_MPI:-openmpi} == mpich ]] && plugin=pmi2
fashion_mnist_subset "$work/data" 4096 256 || exit 1
epochs=12

id=$("$hosts" on rt-a env SLURM_CONF="$SLURM_CONF" RINGTRAIN="$ringtrain" CONFIG="$src/configs/fashion_mnist.toml" \
  SLURM_MPI_TYPE=$plugin sbatch --parsable --time=5 --nodes=2 --ntasks-per-node=2 --cpus-per-task=1 \
  --output="$work/job.out" "$src/docs/examples/ringtrain_elastic.sbatch" --set model.name=lenet \
  --set train.threads=1 --set train.global_batch=64 --set train.batch_per_rank=16 --set train.epochs=$epochs \
  --set checkpoint.every_steps=10 --set log.progress=none --set log.every_steps=1 --set dist.stall_abort_s=15 \
  --set checkpoint.dir="$work/run" "${subset_data[@]}") || { echo "FAIL: sbatch refused the example"; exit 1; }
queued() { [[ -n $("$hosts" on rt-a env SLURM_CONF="$SLURM_CONF" squeue -h -j "$id" 2> /dev/null) ]]; }
for _ in $(seq 1200); do
  grep -qs '"step":30,' "$work/run/metrics.jsonl" && break
  queued || break
  sleep 0.1
done
grep -qs '"step":30,' "$work/run/metrics.jsonl" || { echo "FAIL: the job did not reach step 30"; cat "$work/job.out"; exit 1; }
lose_host rt-b slurmd  # rt-b's processes but its node daemon
# Once the supervisor has left rt-b out, the node may "come back": its step daemons must then clean
# up the lost step, or the allocation waits on them at its end.
for _ in $(seq 1200); do
  grep -qs "launching again" "$work/job.out" && break
  queued || break
  sleep 0.1
done
kill "$killer"
killer=
state=$(slurm_job_end "$id" 120 "$hosts" on rt-a env SLURM_CONF="$SLURM_CONF")
fail=0
said() { grep -Eq "$1" "$work/job.out" || { echo "FAIL: the job's output does not say /$1/"; fail=1; }; }
[[ $state == "JobState=COMPLETED ExitCode=0:0" ]] || { echo "FAIL: the batch job ended as '$state'"; fail=1; }
said "ringtrain elastic: launching 4 ranks on rt-a:2,rt-b:2, global batch 64"
said "ringtrain elastic: leaving rt-b out for 600 s"
said "ringtrain elastic: launching again: 2 ranks on rt-a:2, global batch 64 \(host rt-b failed\)"
said "ringtrain elastic: the job finished \(exit status 0\) after 2 launches"
python3 - "$work/run/metrics.jsonl" "$epochs" << 'EOF' || fail=1
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
ranks = [r["ranks"] for r in records if r["kind"] == "elastic"]
epochs = sorted(r["epoch"] for r in records if r["kind"] == "epoch")
ok = ranks == [4, 2] and epochs == list(range(1, int(sys.argv[2]) + 1))
print(("PASS" if ok else "FAIL") + f": launches at {ranks} ranks; epochs {epochs[:2]}..{epochs[-1:]}")
sys.exit(0 if ok else 1)
EOF
[[ $fail -eq 0 ]] || grep -v "^[a-z_0-9]* *=\|^#\|^\[" "$work/job.out" | tail -30
grep "^ringtrain elastic" "$work/job.out"
exit $fail
