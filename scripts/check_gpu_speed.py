#!/usr/bin/env python3
"""What scripts/check_gpu.sh reads from its speed.jsonl (one JSON line per run, as
bench/gpu_vs_pytorch.sh keeps them):

  check_gpu_speed.py FILE best-setting MODEL   "GRAPH REPLAY" of MODEL's fastest bf16 run ("off false" before any)
  check_gpu_speed.py FILE summary              ringtrain / PyTorch, each model and precision at its fastest setting
  check_gpu_speed.py FILE worst                "MODEL PRECISION GRAPH REPLAY" of the lowest ratio (nothing before one)
"""
import json, sys


def fastest(rows):
    """The fastest ringtrain run of each (model, precision), in the order they were first run."""
    best = {}
    for r in rows:
        if r.get("kind") == "bench":
            k = (r["model"], r["precision"])
            if k not in best or r["median_images_per_s"] > best[k]["median_images_per_s"]:
                best[k] = r
    return best


def setting(r):
    return f"{r['cudnn_graph']} {str(r['cuda_graph']).lower()}"


path, what, *args = sys.argv[1:]
rows = [json.loads(l) for l in open(path) if l.startswith("{")]
torch = {(r["model"], r["precision"]): r["images_per_s"] for r in rows if r.get("kind") == "torch_gpu"}
best = fastest(rows)
if what == "best-setting":
    r = best.get((args[0], "bf16"))
    print(setting(r) if r else "off false")
elif what == "summary":
    print("\n## ringtrain / PyTorch, batch 64 (each row's fastest ringtrain setting; medians of 3 windows)\n")
    print("| model | precision | cudnn_graph | cuda_graph | ringtrain img/s | PyTorch img/s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for (model, precision), r in best.items():
        t = torch.get((model, precision))
        ratio = f"{r['median_images_per_s'] / t:.2f}" if t else "-"
        print(f"| {model} | {precision} | {r['cudnn_graph']} | {str(r['cuda_graph']).lower()} | "
              f"{r['median_images_per_s']:.1f} | {t or 0:.1f} | {ratio} |")
elif what == "worst":
    rated = {k: r for k, r in best.items() if k in torch}
    if rated:
        k, r = min(rated.items(), key=lambda kr: kr[1]["median_images_per_s"] / torch[kr[0]])
        print(k[0], k[1], setting(r))
else:
    sys.exit(f"check_gpu_speed.py: no command '{what}' (best-setting, summary, worst)")
