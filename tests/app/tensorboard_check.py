#!/usr/bin/env python3
"""Checks a run folder's TensorBoard event files against its metrics.jsonl, reading them with the
independent reader tests/support/tfevents.py (every CRC checked, events parsed by Python's protobuf).

usage: tensorboard_check.py view DIR STARTS [--purged]
         The folder's event files, in name order, one per run: STARTS (comma-separated) is each
         file's session-start step. Each file has whole records only, the file version first, then
         its session start, then scalars. Read as TensorBoard reads a folder (a session start at
         step S drops the steps from S on read before it), the scalars equal metrics.jsonl's records
         number for number, as float32, at each record's step: tag "<kind>/<field>", every field but
         kind, step, epoch and images_seen. --purged: the session start dropped something.
       tensorboard_check.py killed DIR
         The one event file of a run killed mid-run: whole records, and its scalars those of
         metrics.jsonl's records but perhaps the last (written before the event).
       tensorboard_check.py cuts FILE
         FILE cut at bytes around its last records' edges reads as its records before the cut.
"""
import glob
import json
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import tfevents  # noqa: E402

PLACES = {"kind", "step", "epoch", "images_seen"}
# What the records hold today (grad_norm with train.clip_grad_norm, test_* after an evaluation,
# the straggler figures on several ranks, the link's over TCP): a field renamed or dropped on either
# side fails here.
EXPECTED_TAGS = {"step/loss", "step/lr", "step/images_per_s", "step/grad_norm", "epoch/train_loss",
                 "epoch/train_top1", "epoch/epoch_seconds", "epoch/data_wait", "epoch/skipped_files",
                 "epoch/test_loss", "epoch/test_top1", "epoch/test_top5", "epoch/compute_ms_median",
                 "epoch/compute_ms_worst", "epoch/worst_rank", "epoch/worst_link_ratio", "epoch/worst_link_ms"}


def fail(message):
    sys.exit(f"FAIL: {message}")


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def metric_scalars(records):
    """[(step, {tag: value})] of metrics.jsonl's records, in order."""
    out = []
    for r in records:
        scalars = {f"{r['kind']}/{k}": f32(v) for k, v in r.items()
                   if k not in PLACES and isinstance(v, (int, float)) and not isinstance(v, bool)}
        out.append((r["step"], scalars))
    return out


def metrics(folder):
    return [json.loads(line) for line in open(os.path.join(folder, "metrics.jsonl")) if line.strip()]


def by_tag(step_scalars):
    tags = {}
    for step, scalars in step_scalars:
        for tag, value in scalars.items():
            tags.setdefault(tag, []).append((step, value))
    return tags


def whole_file(path):
    events, tail = tfevents.events(path)
    if tail:
        fail(f"{path} ends with {tail} bytes of a record cut short")
    if not events or events[0].get("file_version") != "brain.Event:2" or events[0]["wall_time"] < 1e9:
        fail(f"{path}: the first record is not the file version 'brain.Event:2' with a wall time: {events[:1]}")
    return events


def event_files(folder):
    return sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*")))


def view(folder, starts, purged_wanted):
    files = event_files(folder)
    if len(files) != len(starts):
        fail(f"{folder} holds {len(files)} event files {[os.path.basename(f) for f in files]}, expected {len(starts)}")
    seen, purged = [], 0
    for path, start in zip(files, starts):
        events = whole_file(path)
        if len(events) < 2 or not events[1].get("session_start") or events[1]["step"] != start:
            fail(f"{path}: the second record is not a session start at step {start}: {events[1:2]}")
        for e in events[1:]:
            if e.get("session_start"):  # what TensorBoard does with it
                purged += sum(1 for step, _ in seen if step >= e["step"])
                seen = [(step, s) for step, s in seen if step < e["step"]]
            elif "scalars" in e:
                seen.append((e["step"], e["scalars"]))
            else:
                fail(f"{path}: an event other than scalars after the session start: {e}")
    got, want = by_tag(seen), by_tag(metric_scalars(metrics(folder)))
    if set(want) != EXPECTED_TAGS:
        fail(f"metrics.jsonl's fields are {sorted(want)}, the test expects {sorted(EXPECTED_TAGS)}")
    for tag in sorted(set(got) | set(want)):
        g, w = got.get(tag, []), want.get(tag, [])
        if g != w:
            diff = next((i for i, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)))
            fail(f"{tag}: TensorBoard reads {len(g)} points, metrics.jsonl has {len(w)}; first difference at "
                 f"#{diff}: {g[diff:diff + 2]} vs {w[diff:diff + 2]}")
    if purged_wanted and purged == 0:
        fail("no step was dropped by the session start")
    points = sum(len(v) for v in got.values())
    print(f"PASS: {len(files)} event file(s), session starts at {starts}; {points} scalars under {len(got)} tags "
          f"equal metrics.jsonl's, {purged} dropped as TensorBoard drops them")


def killed(folder):
    files = event_files(folder)
    if len(files) != 1:
        fail(f"{folder} holds {len(files)} event files, expected 1")
    events = whole_file(files[0])
    got = [(e["step"], e["scalars"]) for e in events if "scalars" in e]
    want = metric_scalars(metrics(folder))
    if got != want[:len(got)] or len(want) - len(got) not in (0, 1):
        fail(f"killed run: {len(got)} events against {len(want)} metric records")
    print(f"PASS: the killed run's file holds {len(events)} whole records, the metric records' "
          f"{len(got)} of {len(want)}")


def cuts(path):
    data = open(path, "rb").read()
    records, tail = tfevents.read_records(path)
    if tail:
        fail(f"{path} ends inside a record")
    ends, at = [], 0
    for body in records:
        at += 16 + len(body)
        ends.append(at)
    edges = set()
    for start, end in zip([0] + ends[:-1], ends):
        if end > ends[-1] - 3 * (end - start) - 64:  # the last few records
            edges |= {start + 1, start + 8, start + 11, start + 12, (start + end) // 2, end - 4, end - 1, end}
    with tempfile.TemporaryDirectory() as tmp:
        for cut in sorted(edges):
            part = os.path.join(tmp, "cut")
            open(part, "wb").write(data[:cut])
            got, tail = tfevents.read_records(part)
            whole = sum(1 for e in ends if e <= cut)
            if got != records[:whole] or tail != cut - (ends[whole - 1] if whole else 0):
                fail(f"{path} cut at byte {cut}: read {len(got)} records and {tail} bytes, expected {whole}")
    print(f"PASS: {path} cut at {len(edges)} places reads up to its last whole record each time")


def main():
    args = sys.argv[1:]
    try:
        if len(args) in (3, 4) and args[0] == "view":
            view(args[1], [int(s) for s in args[2].split(",")], args[3:] == ["--purged"])
        elif len(args) == 2 and args[0] == "killed":
            killed(args[1])
        elif len(args) == 2 and args[0] == "cuts":
            cuts(args[1])
        else:
            sys.exit(__doc__)
    except tfevents.Unavailable as e:
        print(f"SKIP: {e}")
        sys.exit(tfevents.SKIP)


if __name__ == "__main__":
    main()
