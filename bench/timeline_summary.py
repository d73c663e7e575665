#!/usr/bin/env python3
"""Summarises a ringtrain timeline (log.timeline, Chrome trace JSON) per rank and step: how long
forward, backward and the optimizer took, how long the optimizer waited for the last bucket, and
for each bucket when it was ready, how long its allreduce ran (reduce-scatter / all-gather; with a
sharded update, the SGD on this rank's share runs inside the reduce-scatter, and its own column
says how long) and how much of it overlapped backward.

  bench/timeline_summary.py trace.json [--rank 0] [--step N]
"""
import argparse, collections, json, sys


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--step", type=int, help="default: the last traced step")
    a = p.parse_args()
    try:
        events = json.load(open(a.trace))
    except (OSError, ValueError) as e:
        sys.exit(f"timeline_summary: cannot read {a.trace}: {e}")
    spans = [e for e in events if e.get("ph") == "X" and e["pid"] == a.rank]
    steps = sorted({e["args"]["step"] for e in spans})
    if not steps:
        sys.exit(f"timeline_summary: no spans of rank {a.rank} in {a.trace}")
    step = a.step if a.step is not None else steps[-1]
    mine = [e for e in spans if e["args"]["step"] == step]
    first = {}
    for e in mine:  # compute phases: the step's own span of each name
        first.setdefault(e["name"], e)
    t0 = min(e["ts"] for e in mine)
    ms = lambda us: us / 1000.0
    print(f"rank {a.rank}, step {step} (times in ms from the step's first event)")
    for name in ("data", "forward", "backward", "wait for allreduce", "optimizer"):
        if name in first:
            e = first[name]
            print(f"  {name:<20} {ms(e['ts'] - t0):8.1f} .. {ms(e['ts'] + e['dur'] - t0):8.1f}  ({ms(e['dur']):.1f})")
    backward_end = first["backward"]["ts"] + first["backward"]["dur"] if "backward" in first else None
    by_bucket = collections.defaultdict(dict)
    sgd_us = collections.Counter()  # per bucket: the sharded SGD's slices, summed
    for e in mine:
        if e["name"] == "sharded SGD":
            sgd_us[e["args"]["bucket"]] += e["dur"]
        elif "bucket" in e["args"]:
            by_bucket[e["args"]["bucket"]][e["name"]] = e
    print(f"  {'bucket':>6} {'ready':>8} {'start':>8} {'end':>8} {'reduce-scatter':>15} {'(sgd in it)':>12} "
          f"{'all-gather':>11} {'during backward':>16}")
    hidden = total = 0.0
    for b in sorted(by_bucket):
        d = by_bucket[b]
        ar = d.get("allreduce")
        if not ar:
            continue
        q = d.get("queued", ar)
        end = ar["ts"] + ar["dur"]
        overlap = max(0.0, min(end, backward_end) - ar["ts"]) if backward_end else 0.0
        hidden += overlap
        total += ar["dur"]
        rs, ag = d.get("reduce-scatter"), d.get("all-gather")
        print(f"  {b:>6} {ms(q['ts'] - t0):8.1f} {ms(ar['ts'] - t0):8.1f} {ms(end - t0):8.1f} "
              f"{ms(rs['dur']) if rs else float('nan'):15.1f} {ms(sgd_us[b]):12.1f} "
              f"{ms(ag['dur']) if ag else float('nan'):11.1f} "
              f"{ms(overlap):16.1f}")
    if total > 0:
        print(f"  allreduce total {ms(total):.1f} ms, of which {ms(hidden):.1f} ms ({100 * hidden / total:.0f}%) ran while "
              f"backward was still running")


if __name__ == "__main__":
    main()
