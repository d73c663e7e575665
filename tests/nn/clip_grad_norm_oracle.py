"""PyTorch's clip_grad_norm_ on gradients ringtrain wrote: the oracle of clip_grad_norm_test.cpp.

usage: clip_grad_norm_oracle.py DIR MAX_NORM
DIR/sizes.txt holds one parameter's element count per line, DIR/grads.f32 their gradients back to
back (float32, little-endian). Writes DIR/total_norm.txt (the returned norm) and DIR/clipped.f32.
"""
import sys

import torch

folder, max_norm = sys.argv[1], float(sys.argv[2])
sizes = [int(line) for line in open(f"{folder}/sizes.txt")]
flat = torch.frombuffer(bytearray(open(f"{folder}/grads.f32", "rb").read()), dtype=torch.float32)
assert flat.numel() == sum(sizes), (flat.numel(), sum(sizes))
params = []
for chunk in torch.split(flat, sizes):
    p = torch.nn.Parameter(torch.zeros(chunk.numel()))
    p.grad = chunk.clone()
    params.append(p)
total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=2.0)
open(f"{folder}/total_norm.txt", "w").write(f"{total.item():.9g}\n")
open(f"{folder}/clipped.f32", "wb").write(torch.cat([p.grad for p in params]).numpy().tobytes())
