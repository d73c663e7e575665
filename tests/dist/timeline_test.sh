#!/usr/bin/env bash
# The timeline at -np 2: after the traced steps the job is killed (a run that dies), and
# the file must still be valid JSON with both ranks as process rows, compute spans (forward,
# backward) and one allreduce span per bucket per traced step on each rank, holding its
# reduce-scatter and all-gather phases, with the sharded SGD's slices inside the reduce-scatter
# (the default) or the optimizer as a compute span (dist.sharded_update = false).
# usage: timeline_test.sh RINGTRAIN CONFIG      (exit 77 = skipped)
set -u
ringtrain=$1 config=$2
# shellcheck source=tests/support/fashion_mnist.sh
source "$(dirname "$0")/../support/fashion_mnist.sh"
require_fashion_mnist
command -v python3 > /dev/null || { echo "SKIP: no python3 to parse the JSON"; exit 77; }
work=$(mktemp -d /tmp/ringtrain_timeline_XXXXXX)
trap 'pkill -9 -f "$work/run" 2>/dev/null; rm -rf "$work"' EXIT
launch=$(dirname "$0")/../../scripts/mpi_launch.sh  # Open MPI or MPICH, as configured

for sharded in true false; do
rm -f "$work/trace.json"
"$launch" --testing -np 2 "$ringtrain" --config "$config" \
  --set train.threads=1 --set checkpoint.dir="$work/run" --set log.progress=none \
  --set log.timeline="$work/trace.json" --set log.timeline_first_step=2 --set log.timeline_steps=2 \
  --set dist.bucket_mb=0.1 --set dist.first_bucket_mb=0.02 --set dist.sharded_update=$sharded > "$work/out" 2>&1 &
launcher=$!
for _ in $(seq 240); do
  [[ -f $work/trace.json ]] && grep -q '"step":3' "$work/trace.json" && break
  sleep 0.5
done
kill -9 "$launcher"; pkill -9 -f "$work/run"; wait "$launcher" 2>/dev/null

python3 - "$work/trace.json" "$sharded" <<'PY' || exit 1
import collections, json, sys
events = json.load(open(sys.argv[1]))  # fails unless the file is valid JSON
sharded = sys.argv[2] == "true"
spans = [e for e in events if e.get("ph") == "X"]
by = collections.Counter((e["pid"], e["name"]) for e in spans)
names = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
assert sorted(n.split(" (")[0] for n in names) == ["rank 0", "rank 1"], names
for rank in (0, 1):
    for name in ("data", "forward", "backward"):
        assert by[(rank, name)] == 2, (rank, name, by[(rank, name)])
    assert by[(rank, "optimizer")] == (0 if sharded else 2), (rank, "optimizer", by[(rank, "optimizer")])
    buckets = {e["args"]["bucket"] for e in spans if e["pid"] == rank and e["name"] == "allreduce"}
    assert by[(rank, "allreduce")] == 2 * len(buckets) and len(buckets) > 1, (rank, by[(rank, "allreduce")], buckets)
    # Each allreduce holds its ring's two phases, back to back, inside its own span; the sharded
    # SGD's slices lie inside the reduce-scatter, at least one per bucket.
    for phase in ("reduce-scatter", "all-gather"):
        assert by[(rank, phase)] == by[(rank, "allreduce")], (rank, phase, by[(rank, phase)])
    key = lambda e: (e["pid"], e["args"]["step"], e["args"]["bucket"])
    slack = 1.0  # microseconds of rounding in the trace
    for ar in (e for e in spans if e["pid"] == rank and e["name"] == "allreduce"):
        rs, ag = (next(e for e in spans if e["name"] == n and key(e) == key(ar)) for n in ("reduce-scatter", "all-gather"))
        assert ar["ts"] - slack <= rs["ts"] and abs(rs["ts"] + rs["dur"] - ag["ts"]) <= slack, (ar, rs, ag)
        assert ag["ts"] + ag["dur"] <= ar["ts"] + ar["dur"] + slack, (ar, ag)
        sgd = [e for e in spans if e["name"] == "sharded SGD" and key(e) == key(ar)]
        assert len(sgd) >= 1 if sharded else not sgd, (ar, len(sgd))
        for e in sgd:
            assert rs["ts"] - slack <= e["ts"] and e["ts"] + e["dur"] <= rs["ts"] + rs["dur"] + slack, (rs, e)
    steps = {e["args"]["step"] for e in spans if e["pid"] == rank}
    assert steps == {2, 3}, steps
print("PASS (sharded_update = %s): %d events, %d spans, ranks 0 and 1, %d buckets per step"
      % (sys.argv[2], len(events), len(spans), len(buckets)))
PY
done
