#!/usr/bin/env bash
# Note [Naming the straggler] (app/run/straggler_report.h), a slow link: 2 "hosts" x 2 ranks in
# network namespaces joined by veth, LeNet on a Fashion-MNIST subset, 2 epochs, host rt-a's egress
# shaped to 20 Mbit/s by tc (the veth itself carries several Gbit/s):
# - the flat ring over its own TCP (ranks 0 1 | 2 3): rank 1's transfers to rank 2 cross the shaped
#   egress, and each epoch's report names that link, not a rank;
# - the two-level ring (two rings across the hosts, 0-2 and 1-3): a link from rt-a to rt-b is named;
# - the flat ring without the shaping: no report.
# Creates and removes its own namespaces.
# usage: straggler_link_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
source "$src/tests/support/netns_link.sh"
require_fashion_mnist
command -v tc > /dev/null || { echo "SKIP: no tc command (iproute2)"; exit 77; }
require_netns
work=$(mktemp -d /tmp/ringtrain_straggler_link_XXXXXX)
hosts=$src/scripts/netns_hosts.sh
trap '"$hosts" down; rm -rf "$work"' EXIT
fashion_mnist_subset "$work/data" 2048 256 || exit 1
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=2 --set train.threads=1
        --set train.batch_per_rank=32 --set log.progress=none "${subset_data[@]}")
fail=0
run() {  # NAME RATE|none HIERARCHY
  "$hosts" up > /dev/null || exit 1
  if [[ $2 != none ]] && ! ip netns exec rt-a tc qdisc add dev rt-veth-a root tbf rate "$2" burst 64kb latency 400ms; then
    echo "SKIP: this kernel cannot shape a link (tc tbf)"; exit 77
  fi
  timeout 240 "$hosts" on rt-a "$src/scripts/mpi_launch.sh" --testing --hosts rt-a:2,rt-b:2 -np 4 \
    --rsh "$("$hosts" agent)" --net 10.213.0.0/24 "$ringtrain" "${common[@]}" --set dist.hierarchy="$3" \
    --set checkpoint.dir="$work/$1" > "$work/$1.log" 2>&1 || { echo "FAIL: $1 did not finish"; tail -20 "$work/$1.log"; fail=1; }
  "$hosts" down
}
named() {  # NAME LINK_PATTERN WHAT: each epoch's report and record name the link
  local line
  line=$(grep -m1 "^ringtrain: transfers from $2 took" "$work/$1.log")
  if [[ $(grep -c "^ringtrain: transfers from $2 took [0-9.]*x the others'" "$work/$1.log") -eq 2 ]] &&
     ! grep -q '^ringtrain: rank [0-9]* (.*) computed' "$work/$1.log" &&
     [[ $(grep -c "\"kind\":\"epoch\".*\"straggler\":\"transfers from $2 " "$work/$1/metrics.jsonl") -eq 2 ]]; then
    echo "PASS: $3: $line"
  else
    echo "FAIL: $3: the link should be named after both epochs"; grep -E "^(epoch|ringtrain: (rank|transfers))" "$work/$1.log"; fail=1
  fi
}

run flat_slow 20mbit flat
named flat_slow "rank 1 (rt-a) to rank 2 (rt-b)" "flat ring, rt-a's egress at 20 Mbit/s"
run two_level_slow 20mbit two_level
named two_level_slow "rank [01] (rt-a) to rank [23] (rt-b)" "two-level ring, rt-a's egress at 20 Mbit/s"
run flat_clean none flat
if ! grep -qE '^ringtrain: (transfers from|rank [0-9]* \(.*\) computed)' "$work/flat_clean.log" &&
   grep -q '"worst_link":' "$work/flat_clean/metrics.jsonl"; then
  echo "PASS: flat ring, no shaping: no report, and the link figures in metrics.jsonl"
else
  echo "FAIL: flat ring, no shaping: a report without a straggler, or no link figures"
  grep -E "^(epoch|ringtrain: (rank|transfers))" "$work/flat_clean.log"; fail=1
fi
exit $fail
