#!/usr/bin/env bash
# `ringtrain elastic` across 2 hosts x 2 ranks (network namespaces rt-a and rt-b joined by veth,
# scripts/netns_hosts.sh), LeNet on a Fashion-MNIST subset at a fixed global batch of 64, saving every
# 10 steps, the hosts given by a discovery script (`cat` of a file the test edits), run from rt-a:
#   kill: every process of host b (its MPI daemon and its ranks) is killed mid-epoch, and every
#         process that starts there after it, until the test lets host b "come back". The
#         supervisor must find rt-b (from the job's output, or where that names no host, from a
#         process it cannot keep there), launch again at 2 ranks on rt-a alone (2 micro-batches each,
#         the same global batch), and, once the discovery script has dropped rt-b and lists it
#         again, ask the job to save and stop (SIGUSR1) and launch it at 4 ranks again; the job
#         must train every epoch to the end, and metrics.jsonl must hold the three launches'
#         records (4, 2 and 4 ranks, global batch 64, at increasing steps);
#   cut:  rt-a's end of the link goes down for good mid-epoch: the supervisor must name rt-b, go on
#         at 2 ranks on rt-a and train to the end (Open MPI only).
# Prints, for each, the seconds from the failure to the first step after the launch that followed
# it, and the steps lost (the last step logged before the failure, less the step the launch
# resumed from). Creates and removes its own namespaces.
# usage: elastic_netns_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
source "$src/tests/support/netns_link.sh"
require_fashion_mnist
require_netns
work=$(mktemp -d /tmp/ringtrain_elastic_netns_XXXXXX)
hosts=$src/scripts/netns_hosts.sh
killer=
trap '[[ -n $killer ]] && kill "$killer"; "$hosts" down; pkill -9 -f "$work/" 2> /dev/null; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
fashion_mnist_subset "$work/data" 4096 256 || exit 1
export RINGTRAIN_SIGNAL_HOLD_S=1
epochs=${ELASTIC_TEST_EPOCHS:-14}
fail=0

# run NAME: the supervisor in the background, writing $work/NAME.out; sets pid.
run() {
  local name=$1
  printf 'rt-a 2\nrt-b 2\n' > "$work/listed"
  timeout 400 "$hosts" on rt-a "$ringtrain" elastic --discover "cat $work/listed" --min-np 2 --max-np 4 \
    --look-every-s 0.25 --launcher "$src/scripts/mpi_launch.sh --testing --rsh $("$hosts" agent) --net 10.213.0.0/24" \
    -- "$ringtrain" train --config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.threads=1 \
    --set train.global_batch=64 --set train.batch_per_rank=16 --set train.epochs="$epochs" \
    --set checkpoint.every_steps=10 --set log.progress=none --set log.every_steps=1 --set dist.stall_abort_s=15 \
    --set checkpoint.dir="$work/$name" "${subset_data[@]}" > "$work/$name.out" 2>&1 &
  pid=$!
}

# wait_for WHAT FILE PATTERN [S]: until FILE holds PATTERN (grep -E), at most S seconds (default 120).
wait_for() {
  local what=$1 file=$2 pattern=$3 limit=${4:-120}
  for _ in $(seq $((limit * 10))); do
    grep -Eqs "$pattern" "$file" && return 0
    sleep 0.1
  done
  echo "FAIL: $what: no /$pattern/ in $file within $limit s"
  fail=1
  return 1
}

# figures NAME T_FAIL STEP: waits for the first step after the second launch; prints the seconds
# from T_FAIL to it, and the steps lost: STEP (the last logged at the failure) less the step that
# launch resumed from.
figures() {
  local name=$1 t_fail=$2 step=$3 resumed=""
  for _ in $(seq 1200); do
    resumed=$(relaunch_resumed_from "$work/$name/metrics.jsonl") && break
    sleep 0.1
  done
  [[ -n $resumed ]] || { echo "FAIL: $name: no step after the second launch"; fail=1; return; }
  echo "$name: first step after the launch $(python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$t_fail") s" \
       "after the failure; steps lost: $((step - resumed)) (step $step logged, the launch resumed from step $resumed)"
}

show_figures() { cat "$work/$1.figures"; ! grep -q FAIL "$work/$1.figures" || fail=1; }

# check_finished NAME RANKS...: the supervisor ended with 0, every epoch was trained, and the
# launches' records name RANKS in turn at increasing steps.
check_finished() {
  local name=$1
  shift
  wait "$pid"
  local rc=$?
  python3 - "$work/$name/metrics.jsonl" "$epochs" "$@" << 'EOF' || fail=1
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
epochs, ranks = int(sys.argv[2]), [int(r) for r in sys.argv[3:]]
launches = [r for r in records if r["kind"] == "elastic"]
got = [r["ranks"] for r in launches]
steps = [r["step"] for r in launches]
ok = got == ranks and steps == sorted(steps) and len(set(steps)) == len(steps)
ok = ok and all(r["global_batch"] == 64 for r in launches)
done = sorted(r["epoch"] for r in records if r["kind"] == "epoch")
ok = ok and done == list(range(1, epochs + 1))
print(("PASS" if ok else "FAIL") + f": {sys.argv[1]}: launches at {got} ranks from steps {steps}; epochs {done[:3]}..{done[-1:]}"
      f"; final test top-1 {[r for r in records if r['kind'] == 'epoch'][-1].get('test_top1')}")
sys.exit(0 if ok else 1)
EOF
  [[ $rc -eq 0 ]] || { echo "FAIL: $name: the supervisor exited $rc"; grep "^ringtrain" "$work/$name.out" | tail -20; fail=1; }
}

said() {  # said NAME PATTERN: the supervisor's output holds PATTERN (grep -E)
  grep -Eq "$2" "$work/$1.out" || { echo "FAIL: $1: the supervisor did not say /$2/"; fail=1; }
}

"$hosts" up > /dev/null || exit 1
run kill
wait_for "kill: step 30" "$work/kill/metrics.jsonl" '"step":30,'
t_fail=$(date +%s.%N)
lose_host rt-b  # until it "comes back"
printf 'rt-a 2\n' > "$work/listed"  # the discovery script drops rt-b ...
step=$(last_step "$work/kill/metrics.jsonl")
figures kill "$t_fail" "$step" > "$work/kill.figures" &
figures_pid=$!
wait_for "kill: the launch on rt-a alone" "$work/kill.out" "launching again: 2 ranks on rt-a:2, global batch 64 \(host rt-b failed\)"
kill "$killer"
killer=
sleep 0.6  # the supervisor looks at the list every 0.25 s: it has seen rt-b dropped
printf 'rt-a 2\nrt-b 2\n' > "$work/listed"  # ... and lists it again, back
wait_for "kill: growing back" "$work/kill.out" "launching again: 4 ranks on rt-a:2,rt-b:2, global batch 64" 200
check_finished kill 4 2 4
said kill "leaving rt-b out for 600 s"  # named by the job's output, or found by the probe
said kill "asking the job to save and stop \(SIGUSR1\) to grow from 2 to 4 ranks"
said kill "the job finished \(exit status 0\) after 3 launches"
wait "$figures_pid"
show_figures kill
"$hosts" down
# Under MPICH, Hydra's end of a job whose link is cut is dist_dead_link's to check, and the lines
# it names the host in are test_elastic's: the cut runs in the Open MPI tree only (CI's time).
[[ ${ELASTIC_TEST_ONLY:-} == kill || ${RINGTRAIN_MPI:-openmpi} == mpich ]] && exit $fail

"$hosts" up > /dev/null || exit 1
run cut
wait_for "cut: step 30" "$work/cut/metrics.jsonl" '"step":30,'
t_fail=$(date +%s.%N)
ip -n rt-a link set rt-veth-a down
step=$(last_step "$work/cut/metrics.jsonl")
figures cut "$t_fail" "$step" > "$work/cut.figures" &
figures_pid=$!
wait_for "cut: the launch on rt-a alone" "$work/cut.out" "launching again: 2 ranks on rt-a:2, global batch 64 \(host rt-b failed\)" 90
check_finished cut 4 2
said cut "the job failed \(exit status [0-9]+\) on host rt-b"
wait "$figures_pid"
show_figures cut
exit $fail
