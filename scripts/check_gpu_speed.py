#!/usr/bin/env python3
"""What scripts/check_gpu.sh reads from its speed.jsonl (one JSON line per run, as
bench/gpu_vs_pytorch.sh keeps them, with each run's seconds as run_s; a run stopped at the
deadline is a "stopped" line, a failed one a "failed" line):

  check_gpu_speed.py FILE answers               every answer the plan asks for, one "QUESTION<TAB>ANSWER" a line
                                                (the check reads them once per change of FILE, not one start of
                                                Python per question); a yes/no question not printed is answered "no":
    best-setting MODEL                          "GRAPH REPLAY" of MODEL's fastest bf16 run ("off false" before any)
    faster-replay MODEL                         "true" where MODEL's bf16 run with CUDA-graph replay beat the one
                                                without (both with cudnn_graph off), else "false"
    held torch MODEL PRECISION                  "yes" where FILE holds that run, done or failed
    held bench MODEL PRECISION GRAPH REPLAY     (the same for a ringtrain run)
    rated MODEL PRECISION GRAPH REPLAY          "yes" where FILE holds that ringtrain run with its rate
    failed MODEL PRECISION GRAPH REPLAY         "yes" where that ringtrain run failed and none gave a rate
  check_gpu_speed.py FILE seconds               "KIND SECONDS" per kind of run (torch, plain, replay, graph): its
                                                longest run_s, stopped runs included
  check_gpu_speed.py FILE summary               ringtrain / PyTorch, each model and precision at its fastest
                                                setting; then every run of cuDNN's graph API, with its planning
  check_gpu_speed.py FILE worst                 "MODEL PRECISION GRAPH REPLAY" of the lowest ratio (nothing before one)
  check_gpu_speed.py FILE update SUMMARY_FILE   after each change of FILE, one start of Python for both: the answers
                                                printed, the summary written to SUMMARY_FILE
"""
import contextlib, json, sys


def fastest(rows, keep=lambda r: True):
    """The fastest ringtrain run of each (model, precision), in the order they were first run."""
    best = {}
    for r in rows:
        if r.get("kind") == "bench" and keep(r):
            k = (r["model"], r["precision"])
            if k not in best or r["median_images_per_s"] > best[k]["median_images_per_s"]:
                best[k] = r
    return best


def replay(r):
    return str(r["cuda_graph"]).lower()


def setting(r):
    return f"{r['cudnn_graph']} {replay(r)}"


def is_torch(r):
    return r.get("kind") == "torch_gpu" or r.get("run") == "torch"


def kind_of(r):
    if is_torch(r):
        return "torch"
    if r.get("cudnn_graph", "off") != "off":
        return "graph"
    return "replay" if replay(r) == "true" else "plain"


def runs_of(rows, kind, key):
    """ringtrain's runs of one [model, precision, cudnn_graph, cuda_graph] with this kind."""
    return [r for r in rows if r.get("kind") == kind and not is_torch(r)
            and [r["model"], r["precision"], r["cudnn_graph"], replay(r)] == key]


def answers(rows):
    """(question, answer) for every question whose answer is not "no" (see the usage above)."""
    for (model, precision), r in fastest(rows).items():
        if precision == "bf16":
            yield f"best-setting {model}", setting(r)
    for (model, precision), r in fastest(rows, lambda r: r["cudnn_graph"] == "off").items():
        if precision == "bf16":
            yield f"faster-replay {model}", replay(r)
    # Held: done or failed (a stopped run is not: it runs again).
    keys = {(r["model"], r["precision"], r["cudnn_graph"], replay(r)) for r in rows
            if not is_torch(r) and r.get("kind") in ("bench", "failed")}
    for key in sorted(keys):
        rated = bool(runs_of(rows, "bench", list(key)))
        yield "held bench " + " ".join(key), "yes"
        yield ("rated " if rated else "failed ") + " ".join(key), "yes"
    for key in sorted({(r["model"], r["precision"]) for r in rows
                       if is_torch(r) and r.get("kind") in ("torch_gpu", "failed")}):
        yield "held torch " + " ".join(key), "yes"


def summary(rows):
    torch = {(r["model"], r["precision"]): r["images_per_s"] for r in rows if r.get("kind") == "torch_gpu"}
    print("\n## ringtrain / PyTorch, batch 64 (each row's fastest ringtrain setting; medians of 3 windows)\n")
    print("| model | precision | cudnn_graph | cuda_graph | ringtrain img/s | PyTorch img/s | ratio | plan s |")
    print("|---|---|---|---|---|---|---|---|")
    for (model, precision), r in fastest(rows).items():
        t = torch.get((model, precision))
        ratio = f"{r['median_images_per_s'] / t:.2f}" if t else "-"
        plan = f"{r['plan_s']:.1f}" if "plan_s" in r else "-"
        print(f"| {model} | {precision} | {r['cudnn_graph']} | {replay(r)} | "
              f"{r['median_images_per_s']:.1f} | {t or 0:.1f} | {ratio} | {plan} |")
    # fp16's loss scale: a skipped update, or a step recorded again for a new scale, makes a window
    # do other work than the rest (the run's counts include warm-up, so this may be a false alarm).
    uneven = [f"{model} {precision} ({r.get('skipped_steps', 0)} skipped, "
              f"recorded {r.get('cuda_graph_recordings', 0)} times)"
              for (model, precision), r in fastest(rows).items()
              if r.get("skipped_steps", 0) > 0 or r.get("cuda_graph_recordings", 0) > 1]
    if uneven:
        print("\nSteps skipped or recorded again for a new loss scale, maybe inside a timed window: "
              + "; ".join(uneven))
    graph = [r for r in rows if r.get("kind") in ("bench", "stopped", "failed") and not is_torch(r)
             and r.get("cudnn_graph", "off") != "off"]
    if not graph:
        return
    # Its planning beside the same model's and precision's planning with the legacy API alone.
    legacy = {}
    for r in rows:
        if r.get("kind") == "bench" and r["cudnn_graph"] == "off" and "plan_s" in r:
            legacy.setdefault((r["model"], r["precision"]), r["plan_s"])
    print("\n## cuDNN's graph API: its rate and its planning (plan s: building the model, cuDNN's searches "
          "included; legacy s: the same with cudnn_graph off)\n")
    print("| model | precision | cudnn_graph | cuda_graph | ringtrain img/s | plan s | legacy s | directions | run s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in graph:
        off = legacy.get((r["model"], r["precision"]))
        off = f"{off:.1f}" if off is not None else "-"
        run_s = f"{r['run_s']:.1f}" if "run_s" in r else "-"
        head = f"| {r['model']} | {r['precision']} | {r['cudnn_graph']} | {replay(r)} |"
        if r["kind"] == "bench":
            plan = f"{r['plan_s']:.1f}" if "plan_s" in r else "-"
            print(f"{head} {r['median_images_per_s']:.1f} | {plan} | {off} | {r.get('cudnn_graph_directions', '-')} "
                  f"| {run_s} |")
        elif r["kind"] == "stopped":
            print(f"{head} stopped at the deadline | more than {run_s} | {off} | - | {run_s} |")
        else:
            print(f"{head} failed (exit {r.get('exit')}) | - | {off} | - | {run_s} |")


path, what, *args = sys.argv[1:]
rows = [json.loads(l) for l in open(path) if l.startswith("{")]
if what == "answers":
    for question, answer in answers(rows):
        print(f"{question}\t{answer}")
elif what == "seconds":
    longest = {}
    for r in rows:
        if "run_s" in r:
            k = kind_of(r)
            longest[k] = max(longest.get(k, 0), r["run_s"])
    for k, s in longest.items():
        print(k, f"{s:.2f}")
elif what == "summary":
    summary(rows)
elif what == "update":
    with open(args[0], "w") as f, contextlib.redirect_stdout(f):
        summary(rows)
    for question, answer in answers(rows):
        print(f"{question}\t{answer}")
elif what == "worst":
    torch = {(r["model"], r["precision"]): r["images_per_s"] for r in rows if r.get("kind") == "torch_gpu"}
    rated = {k: r for k, r in fastest(rows).items() if k in torch}
    if rated:
        k, r = min(rated.items(), key=lambda kr: kr[1]["median_images_per_s"] / torch[kr[0]])
        print(k[0], k[1], setting(r))
else:
    sys.exit(f"check_gpu_speed.py: no command '{what}' (answers, seconds, summary, worst, update)")
