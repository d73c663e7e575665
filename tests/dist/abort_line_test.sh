#!/usr/bin/env bash
# A failing rank's message opens a line of its own in the job's output, where stdout and stderr
# go to one file and rank 0 left a line of stdout unfinished (abort_line_job.cpp): grep
# '^ringtrain: rank' finds it, as users' log searches and `ringtrain elastic`'s blame do, and the
# job exits with the rank's status.
# usage: abort_line_test.sh JOB SOURCE_DIR
set -u
job=$1 src=$2
out=$(mktemp /tmp/ringtrain_abort_line_XXXXXX)
trap 'rm -f "$out"' EXIT
timeout 60 "$src/scripts/mpi_launch.sh" --testing -np 2 "$job" > "$out" 2>&1
rc=$?
line=$(grep -m1 "^ringtrain: rank 1 of 2 on [^:]*: error: planted data error$" "$out")
if [[ $rc -eq 65 && -n $line ]] && grep -q "^an unfinished line of rank 0" "$out"; then
  echo "PASS: exit $rc; $line"
else
  echo "FAIL: exit $rc (expected 65); the job's output should hold rank 0's unfinished line and, on a line of its own, rank 1's message:"
  cat "$out"
  exit 1
fi
