# Sourced (not run) by the shell tests that run jobs across the namespace hosts of
# scripts/netns_hosts.sh and cut or shape the link between them:
#   source "$src/tests/support/netns_link.sh"
#   require_netns                    # exit 77 (skipped) where namespaces cannot be made
#   link_cut_run NAME EPOCHS DOWN_S COMMAND...   # the job, its link cut once step 20 is logged
#   expect_job_ended NAME ...; expect_job_finished NAME WHAT
#   lose_host NS [SPARE]; last_step METRICS; relaunch_resumed_from METRICS   # a host lost for good
# They use $work (the test's scratch folder) and set fail=1 on a failed check.
# shellcheck shell=bash

# Ends the test as skipped (exit 77) unless this machine can make network namespaces.
require_netns() {
  command -v ip > /dev/null || { echo "SKIP: no ip command (iproute2)"; exit 77; }
  if ! ip netns add rt-probe 2> /dev/null; then
    echo "SKIP: cannot create network namespaces (needs root / CAP_NET_ADMIN)"
    exit 77
  fi
  ip netns del rt-probe
}

# link_cut_run NAME EPOCHS DOWN_S COMMAND...: runs COMMAND (a job whose arguments end without
# train.epochs and checkpoint.dir) into $work/NAME.log, takes rt-a's end of the link down once
# $work/NAME/metrics.jsonl logs step 20, for DOWN_S seconds (0: for good), and waits for the job;
# sets rc (its exit status) and after_cut (seconds from the cut to its end).
# A job that ends before step 20 never met the cut: it is started again, at most twice, saying so
# (a third such end sets fail=1).
# Open MPI 4.1 under srun --mpi=pmix does that now and then on a loaded machine: a rank that is
# slow through MPI_Init is sent a message before it can take one, and dies there of SIGSEGV.
link_cut_run() {
  local name=$1 epochs=$2 down_s=$3 job cut attempt reached
  shift 3
  for attempt in 1 2 3; do
    rm -rf "${work:?}/$name"
    timeout 300 "$@" --set train.epochs="$epochs" --set checkpoint.dir="$work/$name" > "$work/$name.log" 2>&1 &
    job=$!
    reached=0
    for _ in $(seq 3000); do
      grep -qs '"step":20,' "$work/$name/metrics.jsonl" && { reached=1; break; }
      kill -0 "$job" 2> /dev/null || break
      sleep 0.02
    done
    [[ $reached -eq 1 ]] || ! kill -0 "$job" 2> /dev/null || reached=1  # still running: cut anyway
    [[ $reached -eq 1 || $attempt -eq 3 ]] && break
    wait "$job"
    echo "NOTE: $name: the job ended before step 20 (exit $?), so before the cut; starting it again:"
    job_said "$work/$name.log" | tail -5 | sed 's/^/    /'
  done
  [[ $reached -eq 1 ]] || { echo "FAIL: $name: the job ended before step 20 in 3 attempts"; fail=1; }
  cut=$(date +%s.%N)
  ip -n rt-a link set rt-veth-a down
  if [[ $down_s -gt 0 ]]; then sleep "$down_s"; ip -n rt-a link set rt-veth-a up; fi
  wait "$job"
  rc=$?
  after_cut=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$cut" "$(date +%s.%N)")
}

# What a job said, without the resolved configuration it prints first.
job_said() { grep -Ev "^#|^\[|^[a-z_0-9]+ *=" "$1"; }

# expect_job_ended NAME WHAT LIMIT_S: after link_cut_run with the link cut for good, the job exited
# non-zero (not by timeout) within LIMIT_S of the cut, its output names host rt-b, and no process
# of it is left 15 s later (looked for every 0.2 s, so a job that leaves none does not wait 15 s).
expect_job_ended() {
  local name=$1 what=$2 limit=$3 left
  for _ in $(seq 75); do
    left=$(pgrep -fa "$work/$name" | grep -v pgrep)
    [[ -z $left ]] && break
    sleep 0.2
  done
  if [[ $rc -ne 0 && $rc -ne 124 ]] && python3 -c "import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))" \
       "$after_cut" "$limit" && job_said "$work/$name.log" | grep -q "rt-b" && [[ -z $left ]]; then
    echo "PASS: $what: exited $rc, $after_cut s after the cut, naming rt-b; nothing left"
    job_said "$work/$name.log" | grep -m1 "rt-b" | sed 's/^/    /'
  else
    echo "FAIL: $what: exit $rc, $after_cut s after the cut (at most $limit s, non-zero, naming rt-b, nothing" \
         "left); left: ${left:-nothing}"
    job_said "$work/$name.log" | tail -20
    fail=1
  fi
}

# expect_job_finished NAME WHAT: after link_cut_run with a flap, the job trained to its end.
expect_job_finished() {
  if [[ $rc -eq 0 ]] && grep -q "^done: test top-1" "$work/$1.log"; then
    echo "PASS: $2: trained to its end"
  else
    echo "FAIL: $2: exit $rc, the job should have finished"
    job_said "$work/$1.log" | tail -20
    fail=1
  fi
}

# lose_host NS [SPARE]: host NS lost for good: every process in namespace NS, and whatever starts
# there later, is killed (but those whose command name is SPARE), until `kill "$killer"`.
lose_host() {
  (while :; do
    for p in $(ip netns pids "$1"); do
      [[ -n ${2:-} && $(cat "/proc/$p/comm" 2> /dev/null) == "$2" ]] || kill -9 "$p" 2> /dev/null
    done
    sleep 0.05
  done) &
  killer=$!
}

# last_step METRICS: the last step a metrics.jsonl logged. A launch that resumes removes the steps
# after its checkpoint, so read it at the failure.
last_step() { grep -o '"kind":"step","epoch":[0-9]*,"step":[0-9]*' "$1" | tail -1 | sed 's/.*://'; }

# relaunch_resumed_from METRICS: under `ringtrain elastic`, the step its second launch resumed
# from, once METRICS logs a step after that launch; nothing (status 1) before.
relaunch_resumed_from() {
  python3 -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
e = [i for i, x in enumerate(r) if x["kind"] == "elastic"]
ok = len(e) > 1 and any(x["kind"] == "step" for x in r[e[1]:])
print(r[e[1]]["step"]) if ok else sys.exit(1)' "$1" 2> /dev/null
}
