#!/usr/bin/env bash
# Compute threads follow the CPUs the process may use, not the machine's cores: a taskset mask of
# one CPU gives one thread, and so does a cgroup CPU quota of one CPU (what docker --cpus=1 or a
# Kubernetes limit of 1 sets) on a machine of several. The cgroup half needs root and a writable
# cpu controller (v1 or v2) and skips without them.
# usage: cpu_budget_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
work=$(mktemp -d /tmp/ringtrain_cpus_XXXXXX)
cgroup=""
trap '[[ -n $cgroup ]] && rmdir "$cgroup" 2>/dev/null; rm -rf "$work"' EXIT
bench=(bench --config "$src/configs/teaching/scaling.toml" --set train.threads=0 --set bench.warmup_steps=1
       --set bench.windows=2 --set bench.steps_per_window=1 --set checkpoint.dir="$work/run")
failed=0

first_cpu=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status | cut -d, -f1 | cut -d- -f1)
out=$(taskset -c "$first_cpu" "$ringtrain" "${bench[@]}" 2>&1)
if grep -q "1 compute threads per rank (1 CPU of an affinity mask of 1)" <<< "$out"; then
  echo "PASS: taskset to one CPU gives one compute thread"
else
  echo "FAIL: taskset to one CPU should give one compute thread"; echo "$out"; failed=1
fi

cpus=$(nproc)
if [[ $(id -u) -ne 0 || $cpus -lt 2 ]]; then
  echo "SKIP (cgroup half): needs root and at least 2 CPUs"; exit $((failed ? 1 : 77))
fi
if [[ -w /sys/fs/cgroup/cpu && -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]]; then  # v1
  cgroup=/sys/fs/cgroup/cpu/ringtrain_test_$$
  mkdir "$cgroup" && echo 100000 > "$cgroup/cpu.cfs_period_us" && echo 100000 > "$cgroup/cpu.cfs_quota_us"
elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null && [[ -w /sys/fs/cgroup ]]; then  # v2
  cgroup=/sys/fs/cgroup/ringtrain_test_$$
  mkdir "$cgroup" && echo "100000 100000" > "$cgroup/cpu.max"
fi
if [[ -z $cgroup || ! -d $cgroup ]]; then
  echo "SKIP (cgroup half): no writable cpu controller"; cgroup=""; exit $((failed ? 1 : 77))
fi
out=$(sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cgroup" "$ringtrain" "${bench[@]}" 2>&1)
if grep -q "1 compute threads per rank (1 CPU of a cgroup CPU quota of 1 (affinity mask of $cpus))" <<< "$out"; then
  echo "PASS: a cgroup quota of 1 CPU on $cpus gives one compute thread"
else
  echo "FAIL: a cgroup quota of 1 CPU on $cpus should give one compute thread"; echo "$out"; failed=1
fi
exit $failed
