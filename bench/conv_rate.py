#!/usr/bin/python3
"""How close a step comes to the multiply-add rate of the CPU's units: reads `ringtrain bench
--profile OUT` (forward time per step, backward time per layer) and counts each convolution's and
fully connected layer's multiply-adds on torchvision's model of the same name (hooks on one forward
of one image at the profile's resolution). Prints the rate of the forward and of the backward's
convolutions and products (a layer's backward does twice its forward's multiply-adds, but the
first convolution, whose input needs no gradient), the best rate any one layer's backward reached,
and the ceiling that rate puts on the whole step: every multiply-add of forward and backward at the
best layer's rate, and nothing else. The per-layer table groups repeated blocks (layer3.*.conv2).

  bench/conv_rate.py PROFILE [--image-size N]     (default: 299 for inception_v3, else 224)
"""
import argparse, collections, re, sys

import torch, torchvision

p = argparse.ArgumentParser()
p.add_argument("profile")
p.add_argument("--image-size", type=int, default=0)
args = p.parse_args()

layers, fields = {}, {}
for line in open(args.profile):
    parts = line.split()
    if not parts or parts[0].startswith("#"):
        continue
    if parts[0] == "layer":
        layers[parts[1]] = float(parts[2])
    else:
        fields[parts[0]] = parts[1]
model, batch, forward_s = fields["model"], int(fields["batch_per_rank"]), float(fields["forward_s"])
size = args.image_size or (299 if model == "inception_v3" else 224)

kwargs = {"aux_logits": False, "init_weights": False} if model == "inception_v3" else {}
net = getattr(torchvision.models, model)(**kwargs).eval()
macs = {}  # per image


def count(name):
    def hook(module, inputs, output):
        if isinstance(module, torch.nn.Conv2d):
            k = module.kernel_size[0] * module.kernel_size[1] * module.in_channels // module.groups
            macs[name] = output.numel() * k
        else:
            macs[name] = output.numel() * module.in_features
    return hook


for name, module in net.named_modules():
    if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)):
        module.register_forward_hook(count(name))
with torch.no_grad():
    net(torch.zeros(1, 3, size, size))
first = next(iter(macs))  # the stem: its backward computes no input gradient

missing = [n for n in macs if n not in layers and n + ".conv" not in layers]
if missing:
    sys.exit(f"conv_rate: {args.profile} has no time for {missing[:3]} ({len(missing)} layers of torchvision's {model})")
backward_s = backward_macs = 0.0
groups = collections.defaultdict(lambda: [0.0, 0.0])
best = (0.0, "")
for name, m in macs.items():
    t = layers.get(name, layers.get(name + ".conv"))
    work = batch * m * (1 if name == first else 2)
    backward_s += t
    backward_macs += work
    group = re.sub(r"\.\d+\.", ".*.", name)
    groups[group][0] += work
    groups[group][1] += t
    if work / t > best[0]:
        best = (work / t, name)

forward_macs = batch * sum(macs.values())
step_s = forward_s + sum(layers.values()) + float(fields.get("optimizer_s", 0))
ceiling_s = (forward_macs + backward_macs) / best[0]
print(f"{model}, batch {batch}, {size}x{size}: {sum(macs.values()) / 1e9:.2f} G multiply-adds an image forward")
print(f"forward: {forward_s * 1e3:.0f} ms, {forward_macs / forward_s / 1e9:.0f} G/s (all its layers' time)")
print(f"backward, convolutions and products: {backward_s * 1e3:.0f} ms, {backward_macs / backward_s / 1e9:.0f} G/s")
print(f"best layer's backward: {best[1]}, {best[0] / 1e9:.0f} G/s")
print(f"step (forward, every layer's backward, optimizer): {step_s * 1e3:.0f} ms, {batch / step_s:.2f} img/s")
print(f"ceiling, every multiply-add at the best layer's rate and nothing else: {ceiling_s * 1e3:.0f} ms, "
      f"{batch / ceiling_s:.2f} img/s")
print("| layers | backward ms | G multiply-adds/s |")
print("|---|---|---|")
for group, (work, t) in sorted(groups.items(), key=lambda g: -g[1][1])[:12]:
    print(f"| {group} | {t * 1e3:.1f} | {work / t / 1e9:.0f} |")
