#!/usr/bin/env bash
# A container-sized /dev/shm (Docker's default is 64 MB): with dist.transport = "auto" the ring
# must fall back to TCP saying so in one line, and with "shm" stop with that line, never hang
# (the shared window's pages would fail when first touched). A private mount namespace gives this
# test its own small /dev/shm.
# usage: small_shm_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
[[ $(id -u) -eq 0 ]] || { echo "SKIP: mounting a small /dev/shm needs root"; exit 77; }
unshare -m --propagation private sh -c 'mount -t tmpfs -o size=64m tmpfs /dev/shm' 2>/dev/null ||
  { echo "SKIP: cannot mount a private /dev/shm here"; exit 77; }
work=$(mktemp -d /tmp/ringtrain_shm_XXXXXX)
trap 'pkill -9 -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT
launch=$(dirname "$0")/../../scripts/mpi_launch.sh  # Open MPI or MPICH, as configured
failed=0

# resnet18's 11.7 M parameters need 2 x 47 MB of shared window per rank: 187 MB on the host.
run() {  # run NAME TRANSPORT
  local start=$SECONDS
  timeout 120 unshare -m --propagation private sh -c "mount -t tmpfs -o size=64m tmpfs /dev/shm && \
    '$launch' --testing -np 2 '$ringtrain' bench \
      --config '$src/configs/teaching/scaling.toml' --set bench.windows=2 --set bench.steps_per_window=2 \
      --set bench.warmup_steps=1 --set dist.stall_abort_s=10 --set dist.transport=$2 \
      --set checkpoint.dir='$work/run'" > "$work/$1.out" 2>&1
  rc=$? elapsed=$((SECONDS - start))
}

run auto auto
if [[ $rc -ne 0 ]]; then
  echo "FAIL auto: exit $rc after ${elapsed} s"; cat "$work/auto.out"; failed=1
elif ! grep -Eq "warning: /dev/shm has [0-9]+ MiB .* free but the shared-memory ring needs .*--shm-size=.*runs over TCP" "$work/auto.out" ||
     ! grep -q "ring over TCP" "$work/auto.out"; then
  echo "FAIL auto: no one-line fallback to TCP naming the space"; cat "$work/auto.out"; failed=1
else
  echo "PASS auto: trained over TCP in ${elapsed} s"; grep -m1 "warning:" "$work/auto.out"
fi

run shm shm
if [[ $rc -eq 0 || $rc -eq 124 || $elapsed -gt 20 ]]; then
  echo "FAIL shm: exit $rc after ${elapsed} s (expected an error within 20 s)"; cat "$work/shm.out"; failed=1
elif ! grep -Eq "^ringtrain: rank [01] of 2 .*dist.transport = \"shm\": /dev/shm has [0-9]+ MiB .*emptyDir" "$work/shm.out"; then
  echo "FAIL shm: the error does not name the space and the fix"; cat "$work/shm.out"; failed=1
else
  echo "PASS shm: refused in ${elapsed} s"
fi
exit $failed
