#!/usr/bin/python3
"""PyTorch's own training step on the CPU, the peer that bench/cpu_vs_torch.py measures ringtrain
against: the same model (torchvision's), batch, resolution and thread count, SGD with momentum 0.9
and weight decay 1e-4 as ringtrain's configs/cpu/*.toml, on one fixed random batch.

  /usr/bin/python3 bench/torch_cpu_train.py MODEL BATCH RESOLUTION [--steps N] [--threads T] [--channels-last]
                                           [--bf16]

--bf16 runs forward and the loss under torch.autocast("cpu", dtype=torch.bfloat16), the one line a
PyTorch user adds for bfloat16.

MODEL is resnet101, resnet50, vgg16 or inception3 (Inception-v3 without its auxiliary head).
Needs Debian's python3-torch and python3-torchvision. One untimed step first, then N timed ones;
prints one line ending in step_s=... img_per_s=..., which cpu_vs_torch.py reads, and the BLAS
library PyTorch has loaded (blas=...).
"""
import argparse
import contextlib
import time

import torch
import torchvision

MODELS = {
    "resnet101": lambda: torchvision.models.resnet101(),
    "resnet50": lambda: torchvision.models.resnet50(),
    "vgg16": lambda: torchvision.models.vgg16(),
    "inception3": lambda: torchvision.models.inception_v3(aux_logits=False, init_weights=True),
}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", choices=sorted(MODELS))
    p.add_argument("batch", type=int)
    p.add_argument("resolution", type=int)
    p.add_argument("--steps", type=int, default=3, help="timed steps")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--channels-last", action="store_true", help="NHWC activations, PyTorch's faster CPU layout")
    p.add_argument("--bf16", action="store_true", help="bfloat16 autocast")
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    layout = torch.channels_last if a.channels_last else torch.contiguous_format
    model = MODELS[a.model]().train().to(memory_format=layout)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    images = torch.randn(a.batch, 3, a.resolution, a.resolution).to(memory_format=layout)
    labels = torch.randint(0, 1000, (a.batch,))
    criterion = torch.nn.CrossEntropyLoss()

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16) if a.bf16 else contextlib.nullcontext():
            loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()

    train_step()  # allocations and oneDNN's primitive caches, untimed
    start = time.perf_counter()
    for _ in range(a.steps):
        train_step()
    seconds = (time.perf_counter() - start) / a.steps
    print(f"torch {a.model} batch={a.batch} res={a.resolution} threads={a.threads} "
          f"layout={'channels_last' if a.channels_last else 'nchw'} dtype={'bf16' if a.bf16 else 'fp32'} "
          f"blas={loaded_blas()} step_s={seconds:.3f} img_per_s={a.batch / seconds:.3f}")


def loaded_blas():
    """The BLAS library this process has mapped (Debian's PyTorch calls whatever libblas.so.3 is)."""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "blas" in line.split()[-1]}
    return ",".join(sorted(p.rsplit("/", 2)[-2] + "/" + p.rsplit("/", 1)[-1] for p in paths)) or "none"


if __name__ == "__main__":
    main()
