"""Prints the learning rate of each of TOTAL steps from torch's schedulers: LinearLR over the
first WARMUP steps (from base/WARMUP to base), then PolynomialLR over the rest (to 0, with POWER),
chained with SequentialLR. usage: lr_schedule_oracle.py BASE WARMUP TOTAL POWER"""
import sys

import torch

base, warmup, total, power = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=base)
warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0 / warmup, end_factor=1.0, total_iters=warmup - 1)
decay = torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=total - warmup, power=power)
schedule = torch.optim.lr_scheduler.SequentialLR(opt, [warm, decay], milestones=[warmup])
for _ in range(total):
    print(repr(opt.param_groups[0]["lr"]))
    opt.step()
    schedule.step()
