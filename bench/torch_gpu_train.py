#!/usr/bin/env python3
"""PyTorch's own training step on one GPU, for ringtrain bench on the same GPU to be compared with.

usage: python3 bench/torch_gpu_train.py MODEL BATCH RES PRECISION [--steps N] [--windows W] [--channels-last]
                                       [--profile OUT] [--device cuda|cpu]
MODEL: resnet101 | vgg16 | inception_v3 (with its aux head and loss weight 0.4, as configs/inception_v3.toml)
PRECISION: fp32 (TF32 off) | tf32 | bf16 (autocast) | fp16 (autocast and GradScaler, as fp16 training needs)
Prints one JSON line: model, batch, res, precision, median images/s over the windows.
--profile OUT then profiles 3 more steps with PyTorch's profiler and writes to OUT the one table the
GPU check's profile.txt is read for: the ops by their own time on the GPU, the first 40, to read
beside `ringtrain bench --profile` (no input shapes are recorded: their bookkeeping costs time on
every op and no report reads them). --device cpu runs the same on the CPU (to check this script
where there is no GPU).
"""
import argparse, json, statistics, time

import torch
import torchvision

p = argparse.ArgumentParser()
p.add_argument("model"); p.add_argument("batch", type=int); p.add_argument("res", type=int); p.add_argument("precision")
p.add_argument("--steps", type=int, default=20); p.add_argument("--windows", type=int, default=5)
p.add_argument("--channels-last", action="store_true")
p.add_argument("--profile", metavar="OUT"); p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
a = p.parse_args()
dev = a.device


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()



half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.precision)
tf32 = a.precision != "fp32"
torch.backends.cuda.matmul.allow_tf32 = tf32
torch.backends.cudnn.allow_tf32 = tf32
torch.backends.cudnn.benchmark = True  # algorithm by timing, as ringtrain's find API
torch.manual_seed(0)
build = {"resnet101": torchvision.models.resnet101, "vgg16": torchvision.models.vgg16,
         "inception_v3": lambda: torchvision.models.inception_v3(aux_logits=True, init_weights=True)}
fmt = torch.channels_last if a.channels_last else torch.contiguous_format
m = build[a.model]().to(dev).train().to(memory_format=fmt)
opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
x = torch.randn(a.batch, 3, a.res, a.res, device=dev).to(memory_format=fmt)
y = torch.randint(0, 1000, (a.batch,), device=dev)
loss_fn = torch.nn.CrossEntropyLoss()
fp16 = a.precision == "fp16"
# torch.amp.GradScaler("cuda") since PyTorch 2.3; the older spelling warns there.
if hasattr(torch.amp, "GradScaler"):
    scaler = torch.amp.GradScaler(dev, enabled=fp16)
else:
    scaler = torch.cuda.amp.GradScaler(enabled=fp16 and dev == "cuda")


def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast(dev, dtype=half or torch.bfloat16, enabled=half is not None):
        out = m(x)
        if isinstance(out, tuple):  # Inception-v3 in training: (logits, aux_logits)
            loss = loss_fn(out[0], y) + 0.4 * loss_fn(out[1], y)
        else:
            loss = loss_fn(out, y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()


for _ in range(5):
    step()
sync()
rates = []
for _ in range(a.windows):
    t = time.perf_counter()
    for _ in range(a.steps):
        step()
    sync()
    rates.append(a.batch * a.steps / (time.perf_counter() - t))
print(json.dumps({"kind": "torch_gpu", "model": a.model, "batch": a.batch, "res": a.res, "precision": a.precision,
                  "layout": "channels_last" if a.channels_last else "nchw", "device": dev, "torch": torch.__version__,
                  "images_per_s": statistics.median(rates), "windows": rates}))


if a.profile:
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(3):
            step()
        sync()
    # The sort keys' names changed across PyTorch releases (cuda_ then device_); take the first known.
    keys = (["self_device_time_total", "self_cuda_time_total"] if dev == "cuda" else []) + ["self_cpu_time_total"]
    averages = prof.key_averages()
    for key in keys:
        try:
            table = averages.table(sort_by=key, row_limit=40, max_name_column_width=60)
            break
        except (AttributeError, KeyError, ValueError):
            continue
    with open(a.profile, "w") as f:
        f.write(f"# PyTorch {torch.__version__} profiler: {a.model}, batch {a.batch}, {a.precision}, {dev}, 3 steps\n")
        f.write(f"\n## by op, sorted by {key}\n{table}\n")
