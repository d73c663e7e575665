#!/usr/bin/python3
"""ringtrain against PyTorch on the CPU, same machine, same run: training throughput and peak
resident memory of ResNet-101, VGG-16 and Inception-v3 (no aux head) at batch 8, full resolution,
2 threads, in float32 and in bfloat16. Each repetition runs `ringtrain bench --config
configs/cpu/MODEL.toml` once per ringtrain variant (each precision with each convolution
algorithm: direct, exact, the default; winograd: 3x3 stride-1 convolutions by oneDNN's Winograd
F(4x4, 3x3) in fp32, by ringtrain's F(2x2, 3x3) where it pays in bf16) and PyTorch's own training step, bench/torch_cpu_train.py, in NCHW and
channels_last, in float32 and under bf16 autocast, one after the other, so noise on this shared
machine hits all alike; medians over repetitions are reported, and ratios are against the better
of PyTorch's two layouts in the same precision. Peak memory is GNU time's maximum RSS.

PyTorch runs with what makes it fastest: OpenBLAS (scripts/setup.sh installs libopenblas0-pthread;
the line before the table names the BLAS PyTorch loaded), OPENBLAS_NUM_THREADS = --threads, and
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset for its runs (a machine may set them, pinning OpenBLAS
to older kernels), and tcmalloc for its allocator (--torch-malloc; scripts/setup.sh installs
libtcmalloc-minimal4): under glibc's malloc every large tensor (autocast's bf16 copies of the
weights, the gradients, the optimizer's temporaries) is mapped and unmapped at each step, and on a
machine where page faults are dear that cost PyTorch up to 3.9x. The header names the CPU's bf16
flags and oneDNN's version.

  bench/cpu_vs_torch.py [--reps 3] [--models resnet101,vgg16,inception_v3] [--algorithms direct,winograd]
                        [--precisions fp32,bf16] [--ringtrain build/ringtrain]
"""
import argparse, json, os, re, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_NAMES = {"resnet101": ("resnet101", 224), "vgg16": ("vgg16", 224), "inception_v3": ("inception3", 299),
               "resnet50": ("resnet50", 224)}


def timed(cmd, env=None):
    """Runs cmd under GNU time; returns (stdout, peak RSS in MiB)."""
    r = subprocess.run(["/usr/bin/time", "-f", "peak_rss_kib=%M"] + cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"cpu_vs_torch: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    rss = int(re.findall(r"peak_rss_kib=(\d+)", r.stderr)[-1]) / 1024
    return r.stdout, rss


def ringtrain(binary, model, threads, batch, algorithm, precision):
    config = os.path.join(ROOT, "configs", "cpu", model + ".toml")
    if not os.path.exists(config):  # a model without a CPU config of its own: ResNet-101's recipe
        config = os.path.join(ROOT, "configs", "cpu", "resnet101.toml")
    out, rss = timed([binary, "bench", "--config", config, "--set", f"model.name={model}",
                      "--set", f"train.threads={threads}", "--set", f"train.batch_per_rank={batch}",
                      "--set", f"train.conv_algorithm={algorithm}", "--set", f"train.precision={precision}",
                      "--set", "log.progress=none"])
    record = json.loads([line for line in out.splitlines() if line.startswith('{"kind":"bench"')][-1])
    return record["median_images_per_s"], rss


TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"


def torch_env(threads, malloc):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    if malloc == "tcmalloc":
        env["LD_PRELOAD"] = TCMALLOC
    return env


BLAS = set()


def torch(script, model, threads, batch, steps, channels_last, bf16, malloc):
    name, res = TORCH_NAMES[model]
    cmd = ["/usr/bin/python3", script, name, str(batch), str(res), "--threads", str(threads), "--steps", str(steps)]
    out, rss = timed(cmd + (["--channels-last"] if channels_last else []) + (["--bf16"] if bf16 else []),
                     env=torch_env(threads, malloc))
    BLAS.add(re.search(r"blas=(\S+)", out).group(1))
    return float(re.search(r"img_per_s=([0-9.]+)", out).group(1)), rss


def machine():
    flags = open("/proc/cpuinfo").read()
    model = re.search(r"model name\s*:\s*(.*)", flags)
    bf16 = sorted(set(re.findall(r"\b(avx512_bf16|amx_bf16|amx_tile|avx512f|avx2)\b", flags)))
    dnnl = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libdnnl2"], capture_output=True, text=True).stdout
    torch_version = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    return (f"CPU: {model.group(1) if model else '?'}; flags: {' '.join(bf16)}; oneDNN {dnnl or '?'}; "
            f"PyTorch {torch_version}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--models", default="resnet101,vgg16,inception_v3")
    p.add_argument("--algorithms", default="direct,winograd", help="ringtrain's train.conv_algorithm values")
    p.add_argument("--precisions", default="fp32,bf16", help="fp32 and/or bf16, for both frameworks")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--torch-steps", type=int, default=4, help="timed steps of each PyTorch run")
    p.add_argument("--torch-malloc", choices=("tcmalloc", "glibc"), default="tcmalloc",
                   help="PyTorch's allocator: tcmalloc (libtcmalloc-minimal4, preloaded) or glibc's malloc")
    p.add_argument("--ringtrain", default=os.path.join(ROOT, "build", "ringtrain"))
    p.add_argument("--torch-script", default=os.path.join(ROOT, "bench", "torch_cpu_train.py"))
    a = p.parse_args()
    for f in (a.ringtrain, a.torch_script) + ((TCMALLOC,) if a.torch_malloc == "tcmalloc" else ()):
        if not os.path.exists(f):
            sys.exit(f"cpu_vs_torch: {f} not found (build ringtrain first; --torch-script names the PyTorch step)")
    models, precisions = a.models.split(","), a.precisions.split(",")
    print(machine(), flush=True)
    # (key, algorithm, precision) of ringtrain's runs; (key, channels_last, bf16) of PyTorch's.
    ours = [(f"ringtrain {prec} {alg}", alg, prec) for prec in precisions for alg in a.algorithms.split(",")]
    theirs = [(f"torch {prec} {lay}", lay == "channels_last", prec == "bf16")
              for prec in precisions for lay in ("nchw", "channels_last")]
    runs = {m: {k: [] for k in [o[0] for o in ours] + [t[0] for t in theirs]} for m in models}
    for rep in range(a.reps):
        for m in models:
            for k, alg, prec in ours:
                runs[m][k].append(ringtrain(a.ringtrain, m, a.threads, a.batch, alg, prec))
            for k, cl, bf16 in theirs:
                runs[m][k].append(torch(a.torch_script, m, a.threads, a.batch, a.torch_steps, cl, bf16, a.torch_malloc))
            print(f"rep {rep + 1}/{a.reps} {m}: " + ", ".join(f"{k} {v[-1][0]:.3f} img/s {v[-1][1]:.0f} MiB"
                                                               for k, v in runs[m].items()), flush=True)
    print(f"\nPyTorch's BLAS: {', '.join(sorted(BLAS))}; its allocator: "
          + (f"tcmalloc ({TCMALLOC}, preloaded)" if a.torch_malloc == "tcmalloc" else "glibc's malloc"))
    print(f"medians of {a.reps} repetitions, batch {a.batch}, {a.threads} threads (img/s; peak RSS MiB)")
    keys = [o[0] for o in ours] + [t[0] for t in theirs]
    ratios = [(o[0], o[2]) for o in ours]
    extra = "bf16" in precisions and "fp32" in precisions and "direct" in a.algorithms.split(",")
    print("| model | " + " | ".join(keys) + " | " + " | ".join(f"{k} / best torch {prec}" for k, prec in ratios)
          + (" | ringtrain bf16 direct / fp32 direct" if extra else "") + " | peak MiB " + " / ".join(keys) + " |")
    print("|---" * (2 + len(keys) + len(ratios) + extra) + "|")
    for m in models:
        med = {k: (statistics.median(x for x, _ in v), statistics.median(r for _, r in v)) for k, v in runs[m].items()}
        best = {prec: max(med[f"torch {prec} nchw"][0], med[f"torch {prec} channels_last"][0]) for prec in precisions}
        row = f"| {m} | " + " | ".join(f"{med[k][0]:.3f}" for k in keys) + " | "
        row += " | ".join(f"{med[k][0] / best[prec]:.2f}x" for k, prec in ratios)
        if extra:
            row += f" | {med['ringtrain bf16 direct'][0] / med['ringtrain fp32 direct'][0]:.2f}x"
        print(row + " | " + " / ".join(f"{med[k][1]:.0f}" for k in keys) + " |")


if __name__ == "__main__":
    main()
