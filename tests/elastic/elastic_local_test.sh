#!/usr/bin/env bash
# `ringtrain elastic` around real 2-rank jobs on this host, under the launcher this tree was built
# with (scripts/mpi_launch.sh), LeNet on a Fashion-MNIST subset:
#   finishes:    a job that trains to its end ends the supervisor with status 0, after one launch,
#                and metrics.jsonl holds the launch's record;
#   bad_key:     a config the supervisor cannot load: it launches nothing (78);
#   config, data: a job that fails on its config (78) or data (65) is not launched again;
#   min_np:      fewer usable slots than --min-np: it says so and launches nothing;
#   unreachable: a listed host whose MPI daemon cannot start (its rsh agent fails; Open MPI ends
#                the launch, Hydra waits for good, until --start-timeout-s): left out, and the job
#                finishes on this host after a second launch;
#   host_limit:  a job that fails every time (a fault planted at step 3) on this host, left out for
#                0 s: launched 3 times, then the host is out for good and it stops, saying why;
#   max_failures: the same with --host-failures 10 --max-failures 2: stops after 2 failures.
# Under MPICH (CI's second tree) only config, data and unreachable run: what Hydra decides.
# usage: elastic_local_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_elastic_local_XXXXXX)
trap 'pkill -9 -f "$work/" 2> /dev/null; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
fashion_mnist_subset "$work/data" 1024 128 || exit 1
echo "$(hostname) 2" > "$work/hosts"
elastic=("$ringtrain" elastic --hosts "$work/hosts" --launcher "$src/scripts/mpi_launch.sh --testing")
job=(-- "$ringtrain" train --config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=1
     --set train.threads=1 --set train.global_batch=64 --set log.progress=none "${subset_data[@]}")
fail=0

# expect NAME STATUS LAUNCHES PATTERN ARGS...: the supervisor with ARGS exits with STATUS, having
# launched the job LAUNCHES times, and its last line matches PATTERN (grep -E).
expect() {
  local name=$1 want=$2 launches=$3 pattern=$4 got n last
  shift 4
  timeout 300 "${elastic[@]}" "$@" --set checkpoint.dir="$work/$name" > "$work/$name.out" 2>&1
  got=$?
  n=$(grep -c "^ringtrain elastic: launching" "$work/$name.out")
  last=$(grep "^ringtrain elastic:" "$work/$name.out" | tail -1)
  if [[ $got -eq $want && $n -eq $launches ]] && grep -Eq "$pattern" <<< "$last"; then
    echo "PASS: $name: exit $got after $n launch(es): $last"
  else
    echo "FAIL: $name: exit $got after $n launch(es) (expected $want after $launches), last line '$last'" \
         "(expected /$pattern/)"
    grep -v "^[a-z_0-9]* *=\|^#\|^\[" "$work/$name.out" | tail -15
    fail=1
  fi
}

# Under MPICH only what Hydra decides: the statuses it passes on, and a host its proxy cannot reach.
mpich=0
[[ ${RINGTRAIN_MPI:-openmpi} == mpich ]] && mpich=1
if ((!mpich)); then
  expect finishes 0 1 "the job finished \(exit status 0\) after 1 launch" "${job[@]}"
  grep -q '"kind":"elastic".*"ranks":2,"global_batch":64,"event":"start","launch":1' "$work/finishes/metrics.jsonl" ||
    { echo "FAIL: finishes: no launch record in metrics.jsonl"; fail=1; }
  python3 "$src/tests/app/metrics_fields_test.py" "$src" "$work/finishes/metrics.jsonl" || fail=1
  expect bad_key 78 0 "error: --set train.bogus=1: unknown key" "${job[@]}" --set train.bogus=1
fi
expect config 78 1 "command line or config is wrong \(exit status 78\): not launching it again" \
  "${job[@]}" --set model.name=nosuchmodel
expect data 65 1 "data is wrong \(exit status 65\): not launching it again" "${job[@]}" --set data.dir="$work/none"
((mpich)) || expect min_np 1 0 "stopping: 2 slots usable on $(hostname):2; the job needs at least 4 ranks" --min-np 4 "${job[@]}"
# A listed host whose daemon cannot start (the rsh agent fails): left out, and the job goes on here.
printf '%s 2\nrt-nosuch 2\n' "$(hostname)" > "$work/hosts2"
expect unreachable 0 2 "the job finished \(exit status 0\) after 2 launches" --hosts "$work/hosts2" \
  --launcher "$src/scripts/mpi_launch.sh --testing --rsh /bin/false" --start-timeout-s 8 "${job[@]}"
grep -q "leaving rt-nosuch out for 600 s" "$work/unreachable.out" ||
  { echo "FAIL: unreachable: rt-nosuch is not left out"; grep "^ringtrain elastic" "$work/unreachable.out"; fail=1; }
((mpich)) && exit $fail
export RINGTRAIN_TEST_FAULT=1:step:3
expect host_limit 1 3 "stopping: 0 slots usable; left out: $(hostname) \(failed 3 times: out for good\)" \
  --leave-out-s 0 "${job[@]}"
grep -q "leaving $(hostname) out for good: it failed 3 times (--host-failures 3)" "$work/host_limit.out" ||
  { echo "FAIL: host_limit: the host is not said to be out for good"; fail=1; }
expect max_failures 1 2 "stopping: the job failed 2 times within 3600 s \(--max-failures 2 --window-s 3600\)" \
  --leave-out-s 0 --host-failures 10 --max-failures 2 "${job[@]}"
exit $fail
