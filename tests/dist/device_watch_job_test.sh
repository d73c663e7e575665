#!/usr/bin/env bash
# The GPU watchdog's wiring in a real job, without a GPU (device_watch_job.cpp: the device
# collectives' pieces, warm-up, gates and abort times over host-staged MPI stand-ins that block on
# the host as NCCL's calls do while connecting). First a clean run, which must average every step;
# then the victim rank freezes three ways: it sleeps before the set-up's warm-up (its first
# exchange), sleeps after set-up before step 1's first exchange, or stops (SIGSTOP) mid-run. Each
# time the job must end within dist.stall_abort_s (3 s here, dist.stall_warn_s 1 s) plus 5 s of
# the freeze, warned about first, its first abort message coming from a rank that waits on the
# victim and naming the victim, that rank reporting no call into a communicator after the abort
# and its blocked thread parked, and nothing crashing.
#   flat_np2: the flat ring at 2 ranks, victim 1: rank 0 aborts, naming rank 1 alone.
#   flat_np3: the flat ring at 3 ranks, victim 1: rank 0 or 2 aborts, naming rank 1 as one of
#             its two neighbours (NCCL cannot say which of them stopped).
#   two_level_np4: 2 fake hosts x 2 ranks, victim 3: rank 2, inside the victim's host, aborts
#             first, naming rank 3 and its host's ring; the ranks of host 0, which wait across
#             hosts, wait 2 s longer.
# usage: device_watch_job_test.sh JOB SOURCE_DIR flat_np2|flat_np3|two_level_np4
set -u
job=$1 src=$2 case=$3
abort_s=3 warn_s=1
# The clean run must not warn: on a loaded machine (3 or 4 ranks on 2 cores) a step may take
# longer than the freeze runs' 1 s, so it waits 10 s to warn and 30 s to abort.
clean_abort_s=30 clean_warn_s=10
case $case in
  flat_np2) np=2 hierarchy=flat victim=1 aborter='0' names='rank 1 is stuck' ;;
  flat_np3) np=3 hierarchy=flat victim=1 aborter='[02]' names='(rank 1 or rank [0-9]|or rank 1) is stuck' ;;
  two_level_np4) np=4 hierarchy=two_level victim=3 aborter='2'
    names='exchange inside host 1 \(ranks 2 to 3\) .*: rank 3 is stuck'
    export RINGTRAIN_FAKE_HOST_RANKS=2 ;;
  *) echo "unknown case $case"; exit 2 ;;
esac
work=$(mktemp -d /tmp/ringtrain_device_watch_XXXXXX)
trap 'rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh

timeout 60 "$launch" --testing -np $np "$job" $hierarchy none $victim $clean_abort_s $clean_warn_s \
  > "$work/none.out" 2>&1 ||
  { echo "FAIL: the run without a frozen rank failed"; cat "$work/none.out"; exit 1; }
grep -q "device_watch_job: 8 steps averaged on $np ranks" "$work/none.out" ||
  { echo "FAIL: the run without a frozen rank did not finish its steps"; cat "$work/none.out"; exit 1; }
if grep -q "warning" "$work/none.out"; then echo "FAIL: warnings without a frozen rank"; cat "$work/none.out"; exit 1; fi

for mode in before_warm_up before_first_step mid_run; do
  out=$work/$mode.out
  timeout 60 "$launch" --testing -np $np "$job" $hierarchy $mode $victim $abort_s $warn_s > "$out" 2>&1
  rc=$?
  end=$(date +%s.%N)
  fail() { echo "FAIL: $case, rank $victim frozen $mode: $1"; cat "$out"; exit 1; }
  [[ $rc -ne 0 ]] || fail "the job succeeded"
  [[ $rc -ne 124 ]] || fail "the job was still running after 60 s"
  freeze=$(grep -o 'freeze_at=[0-9.]*' "$out" | head -1 | cut -d= -f2)
  [[ -n $freeze ]] || fail "the victim never froze"
  elapsed=$(awk -v a="$freeze" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  awk -v e="$elapsed" -v s=$abort_s 'BEGIN { exit !(e >= s - 0.5 && e <= s + 5) }' ||
    fail "the job ended ${elapsed} s after the freeze, not within dist.stall_abort_s = $abort_s s plus 5 s"
  grep -Eq "warning: (set-up|step [0-9]+, bucket [0-9]+): .* has waited [0-9]+ s" "$out" || fail "no stall warning"
  first=$(grep -m1 "^ringtrain: rank" "$out")
  [[ $first =~ ^ringtrain:\ rank\ $aborter\ of\ $np\  ]] || fail "the first abort comes from the wrong rank: $first"
  grep -Eq "$names" <<< "$first" || fail "the first abort message does not name rank $victim as expected: $first"
  grep -Eq "dist.stall_abort_s = $abort_s\)" <<< "$first" || fail "the first abort is not the stall's: $first"
  r=${first#ringtrain: rank }
  r=${r%% *}
  grep -q "^rank $r: calls into a communicator after the abort: 0, threads parked: [1-9]" "$out" ||
    fail "rank $r called into a communicator after the abort, or parked no thread"
  if grep -Eiq "segmentation|terminate called|signal 11|core dumped" "$out"; then fail "a rank crashed"; fi
  echo "PASS: $case, rank $victim frozen $mode: the job ended ${elapsed} s after: $first"
done
