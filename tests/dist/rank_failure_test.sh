#!/usr/bin/env bash
# Failure handling across ranks, with the real binary launched at -np 3 (Open MPI or MPICH):
#   kill:  rank 1 is killed (SIGKILL) mid-training; every other rank must be gone within 30 s and
#          the job's output must name rank 1 (Open MPI) or a process killed by signal 9 (Hydra).
#   stall: rank 1 is frozen (SIGSTOP); the others' stall watch must warn, then abort the job
#          within dist.stall_abort_s, naming the step, the bucket and rank 1.
#   stall_two_level: as stall, at -np 4 as 2 fake hosts x 2 ranks (the two-level ring, whose
#          rings run on sub-communicators), freezing rank 3: the messages must name world rank 3
#          and the ring it sits in, not its position in that ring.
#   stall_gpu: as stall, at -np 2 with train.device = "cuda", one GPU per rank (skipped without 2
#          GPUs): the GPU watchdog must warn, then end the job, naming step, bucket and rank 1, and
#          no rank may crash on an aborted NCCL communicator.
#   freeze_before_check: rank 1 freezes itself (RINGTRAIN_TEST_FAULT) just before the replica
#          check after step 20, between the ring's steps: the others must warn, then abort within
#          dist.stall_abort_s, naming the check and its step (Note [Watched collectives]).
# A freeze at a random moment (stall*) may also land between steps, in a collective that cannot
# name the missing rank; its messages must then name the step and the collective instead.
# usage: rank_failure_test.sh RINGTRAIN CONFIG kill|stall|stall_two_level|stall_gpu|freeze_before_check
#        (exit 77 = skipped)
set -u
ringtrain=$1 config=$2 mode=$3
np=3 victim_rank=1
if [[ $mode == stall_two_level ]]; then np=4 victim_rank=3; export RINGTRAIN_FAKE_HOST_RANKS=2; fi
device=()
[[ $mode == freeze_before_check ]] && export RINGTRAIN_TEST_FAULT=$victim_rank:freeze_before_replica_check:20
if [[ $mode == stall_gpu ]]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU" || true)
  if [[ ${gpus:-0} -lt 2 ]]; then echo "SKIP: stall_gpu needs 2 GPUs, this machine has ${gpus:-0}"; exit 77; fi
  np=2 device=(--set train.device=cuda)
fi
# shellcheck source=tests/support/fashion_mnist.sh
source "$(dirname "$0")/../support/fashion_mnist.sh"
# shellcheck source=tests/support/rank_jobs.sh
source "$(dirname "$0")/../support/rank_jobs.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_failure_XXXXXX)
trap 'pkill -9 -f "$work/run" 2>/dev/null; rm -rf "$work"' EXIT
launch=$(dirname "$0")/../../scripts/mpi_launch.sh  # Open MPI or MPICH, as configured

"$launch" --testing -np $np "$ringtrain" --config "$config" \
  --set train.epochs=50 --set train.threads=1 --set checkpoint.dir="$work/run" \
  --set log.progress=lines --set log.every_steps=5 \
  --set dist.stall_warn_s=2 --set dist.stall_abort_s=6 "${device[@]}" > "$work/out" 2>&1 &
launcher=$!

# Wait until training is under way (rank 0 printed a step line).
for _ in $(seq 240); do grep -q "step 5/" "$work/out" && break; sleep 0.5; done
grep -q "step 5/" "$work/out" || { echo "FAIL: training did not start"; cat "$work/out"; exit 1; }

victim=$(rank_pid "$work/run" "$victim_rank")
[[ -n $victim ]] || { echo "FAIL: could not find rank $victim_rank"; exit 1; }

case $mode in
  kill) kill -KILL "$victim"; limit=30 ;;
  freeze_before_check) limit=60 ;;  # it freezes itself at step 20 (step 5 is printed first)
  *) kill -STOP "$victim"; limit=40 ;;
esac
start=$(date +%s)
while kill -0 "$launcher" 2>/dev/null; do
  if (( $(date +%s) - start > limit )); then
    echo "FAIL: the job was still running ${limit} s after rank $victim_rank was ${mode}ed"; cat "$work/out"; exit 1
  fi
  sleep 0.5
done
elapsed=$(( $(date +%s) - start ))
# Hydra may return while the ranks it SIGKILLed are still being reaped: allow a second.
for _ in 1 2 3 4 5; do pgrep -f "$work/run" > /dev/null || break; sleep 0.2; done
left=$(pgrep -f "$work/run" | wc -l)
[[ $left -eq 0 ]] || { echo "FAIL: $left ranks still alive"; exit 1; }

if [[ $mode == kill ]]; then
  # Open MPI names the rank. Hydra names neither rank nor victim: its "BAD TERMINATION" block
  # gives the PID of the host's first process and the signal as "EXIT CODE: 9".
  grep -Eq "rank 1 .*(exited on signal 9|Killed)" "$work/out" ||
    { grep -q "BAD TERMINATION" "$work/out" && grep -q "EXIT CODE: 9" "$work/out"; } ||
    { echo "FAIL: the output names neither rank 1 nor a process killed by signal 9"; cat "$work/out"; exit 1; }
elif [[ $mode == freeze_before_check ]]; then
  grep -q "warning: the replica check after step 20: MPI_Iallgather over 3 ranks has waited [0-9]* s (dist.stall_warn_s = 2)" "$work/out" ||
    { echo "FAIL: no warning naming the replica check after step 20"; cat "$work/out"; exit 1; }
  grep -Eq "rank [02] of 3 .*the replica check after step 20: MPI_Iallgather over 3 ranks has waited [0-9]+ s \(dist.stall_abort_s = 6\): a rank that has not joined it" "$work/out" ||
    { echo "FAIL: the abort message does not name the replica check after step 20"; cat "$work/out"; exit 1; }
else
  # A freeze between the ring's steps (see above): the waiting collective's own report.
  between_warn="warning: .*step [0-9]+.*: MPI_I[a-z]+ over $np ranks has waited [0-9]+ s \\(dist.stall_warn_s = 2\\)"
  between_abort="rank [0-9] of $np .*step [0-9]+.*: MPI_I[a-z]+ over $np ranks has waited [0-9]+ s \\(dist.stall_abort_s = 6\\): a rank that has not joined it"
  case $mode in
    stall_gpu)
      ring_warn="warning: step [0-9]+, bucket [0-9]+: the ring's exchange over NCCL point-to-point, .* has waited"
      ring_abort="rank 0 of 2 .*step [0-9]+, bucket [0-9]+: .*dist.stall_abort_s = 6\\): rank 1 \\([^)]+\\) is stuck, dead" ;;
    stall_two_level)
      ring_warn="warning: step [0-9]+, bucket [0-9]+: .* rank 3 has waited [0-9]+ s in the ring"
      ring_abort="rank [0-2] of 4 .*step [0-9]+, bucket [0-9]+: .* rank [0-9] has waited [0-9]+ s in the ring .*: rank 3 \\([^)]+\\) is stuck, dead" ;;
    *)
      ring_warn="warning: step [0-9]+, bucket [0-9]+: .* rank 1 has waited"
      # The rank that aborts may wait on rank 1 directly, or on a rank that waits on rank 1.
      ring_abort="rank [02] of 3 .*step [0-9]+, bucket [0-9]+: .* rank [0-9] has waited [0-9]+ s \\(dist.stall_abort_s.*: rank 1 \\([^)]+\\) is stuck, dead" ;;
  esac
  grep -Eq "$ring_warn|$between_warn" "$work/out" ||
    { echo "FAIL: no stall warning naming rank $victim_rank (or the step and collective)"; cat "$work/out"; exit 1; }
  grep -Eq "$ring_abort|$between_abort" "$work/out" ||
    { echo "FAIL: the abort message names neither step, bucket and rank $victim_rank nor the step and collective"
      cat "$work/out"; exit 1; }
  if [[ $mode == stall_gpu ]] && grep -Eiq "segmentation|terminate called|NCCL error" "$work/out"; then
    echo "FAIL: a rank crashed or reported an NCCL error after the abort"; cat "$work/out"; exit 1
  fi
fi
echo "PASS: $mode of rank $victim_rank ended the job in ${elapsed} s"
grep -E "rank $victim_rank|stall|waited" "$work/out" | head -5
