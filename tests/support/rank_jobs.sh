# Helpers for the shell tests that act on one rank of a running job (source it).

# rank_pid PATTERN RANK: the pid of rank RANK among the processes whose command line holds PATTERN
# (the job's checkpoint.dir, say), read from Open MPI's or MPICH's rank variable; empty if none.
rank_pid() {
  local pattern=$1 rank=$2 p
  for p in $(pgrep -f -- "$pattern"); do
    tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -Eqx "(OMPI_COMM_WORLD_RANK|PMI_RANK)=$rank" && { echo "$p"; return; }
  done
}

# wait_for_steps DIR N [SECONDS]: waits until DIR/metrics.jsonl holds at least N step records;
# after SECONDS (default 30) it says so and exits the test with status 1.
wait_for_steps() {
  local dir=$1 n=$2 end=$((SECONDS + ${3:-30}))
  while ((SECONDS < end)); do
    [[ -f $dir/metrics.jsonl ]] && (($(grep -c '"kind":"step"' "$dir/metrics.jsonl") >= n)) && return 0
    sleep 0.01
  done
  echo "FAIL: $dir did not reach step $n within ${3:-30} s"
  exit 1
}
