#!/usr/bin/python3
"""ringtrain against PyTorch on the CPU, same machine, same run: training throughput and peak
resident memory of ResNet-101, VGG-16 and Inception-v3 (no aux head) at batch 8, full resolution,
2 threads. Each repetition runs `ringtrain bench --config configs/cpu/MODEL.toml` once per
convolution algorithm (direct: exact, the default; winograd: 3x3 stride-1 convolutions by
Winograd F(4x4, 3x3)) and PyTorch's own training step, bench/torch_cpu_train.py, in NCHW and in
channels_last, one after the other, so noise on this shared machine hits all alike; medians over
repetitions are reported, and ratios are against the better of PyTorch's two layouts. Peak memory
is GNU time's maximum RSS.

  bench/cpu_vs_torch.py [--reps 3] [--models resnet101,vgg16,inception_v3] [--algorithms direct,winograd]
                        [--ringtrain build/ringtrain]
"""
import argparse, json, os, re, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_NAMES = {"resnet101": ("resnet101", 224), "vgg16": ("vgg16", 224), "inception_v3": ("inception3", 299)}


def timed(cmd, env=None):
    """Runs cmd under GNU time; returns (stdout, peak RSS in MiB)."""
    r = subprocess.run(["/usr/bin/time", "-f", "peak_rss_kib=%M"] + cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"cpu_vs_torch: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    rss = int(re.findall(r"peak_rss_kib=(\d+)", r.stderr)[-1]) / 1024
    return r.stdout, rss


def ringtrain(binary, model, threads, batch, algorithm):
    out, rss = timed([binary, "bench", "--config", os.path.join(ROOT, "configs", "cpu", model + ".toml"),
                      "--set", f"train.threads={threads}", "--set", f"train.batch_per_rank={batch}",
                      "--set", f"train.conv_algorithm={algorithm}", "--set", "log.progress=none"])
    record = json.loads([line for line in out.splitlines() if line.startswith('{"kind":"bench"')][-1])
    return record["median_images_per_s"], rss


def torch(script, model, threads, batch, steps, channels_last):
    name, res = TORCH_NAMES[model]
    cmd = ["/usr/bin/python3", script, name, str(batch), str(res), "--threads", str(threads), "--steps", str(steps)]
    out, rss = timed(cmd + (["--channels-last"] if channels_last else []))
    return float(re.search(r"img_per_s=([0-9.]+)", out).group(1)), rss


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--models", default="resnet101,vgg16,inception_v3")
    p.add_argument("--algorithms", default="direct,winograd", help="ringtrain's train.conv_algorithm values to run")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--torch-steps", type=int, default=4, help="timed steps of each PyTorch run")
    p.add_argument("--ringtrain", default=os.path.join(ROOT, "build", "ringtrain"))
    p.add_argument("--torch-script", default=os.path.join(ROOT, "bench", "torch_cpu_train.py"))
    a = p.parse_args()
    for f in (a.ringtrain, a.torch_script):
        if not os.path.exists(f):
            sys.exit(f"cpu_vs_torch: {f} not found (build ringtrain first; --torch-script names the PyTorch step)")
    models, algorithms = a.models.split(","), a.algorithms.split(",")
    ours = [f"ringtrain {alg}" for alg in algorithms]
    runs = {m: {**{k: [] for k in ours}, "nchw": [], "channels_last": []} for m in models}
    for rep in range(a.reps):
        for m in models:
            for alg, k in zip(algorithms, ours):
                runs[m][k].append(ringtrain(a.ringtrain, m, a.threads, a.batch, alg))
            runs[m]["nchw"].append(torch(a.torch_script, m, a.threads, a.batch, a.torch_steps, False))
            runs[m]["channels_last"].append(torch(a.torch_script, m, a.threads, a.batch, a.torch_steps, True))
            print(f"rep {rep + 1}/{a.reps} {m}: " + ", ".join(f"{k} {v[-1][0]:.3f} img/s {v[-1][1]:.0f} MiB"
                                                               for k, v in runs[m].items()), flush=True)
    print(f"\nmedians of {a.reps} repetitions, batch {a.batch}, {a.threads} threads (img/s; peak RSS MiB)")
    print("| model | " + " | ".join(ours) + " | torch NCHW | torch channels_last | "
          + " | ".join(f"ratio {k}" for k in ours) + " | peak MiB " + " / ".join(ours) + " / NCHW / CL |")
    print("|---" * (3 + 2 * len(ours) + 1) + "|")
    for m in models:
        med = {k: (statistics.median(x for x, _ in v), statistics.median(r for _, r in v)) for k, v in runs[m].items()}
        best = max(med["nchw"][0], med["channels_last"][0])
        print(f"| {m} | " + " | ".join(f"{med[k][0]:.3f}" for k in ours)
              + f" | {med['nchw'][0]:.3f} | {med['channels_last'][0]:.3f} | "
              + " | ".join(f"{med[k][0] / best:.2f}x" for k in ours) + " | "
              + " / ".join(f"{med[k][1]:.0f}" for k in ours + ["nchw", "channels_last"]) + " |")


if __name__ == "__main__":
    main()
