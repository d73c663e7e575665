# PyTorch's side of powersgd_oracle_test.sh: PyTorch 1.13's powerSGD_hook (error feedback and warm
# start on, min_compression_rate 2) on the gradients ringtrain's powersgd_job averaged.
#   make DIR RANKS STEPS RANK      DIR/in.safetensors: every rank's gradients of every step
#                                  ("r<rank>.s<step>.<name>") and the first Q of each tensor PyTorch
#                                  compresses at RANK ("q0.<name>", m x k)
#   torch DIR RANKS RANK START     RANKS processes over gloo run the hook on a bucket of those
#                                  gradients, its first Q's set to q0, every step; rank 0 writes
#                                  DIR/torch.safetensors ("s<step>.<name>")
#   compare DIR RANKS START        every rank's ringtrain output has the same bits; each tensor of
#                                  each step is within TOLERANCE x its largest value of PyTorch's
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from torch_reference import read_safetensors, write_safetensors  # noqa: E402

# A bucket as DDP would fill it: two tensors of one shape (the hook groups them by shape), 1-D
# ones, and a 2-D one too small to compress, between the compressed ones.
SHAPES = [("conv", (16, 8, 3, 3)), ("conv_bias", (16,)), ("fc_a", (32, 32)), ("tiny", (3, 4)),
          ("fc", (10, 64)), ("fc_b", (32, 32)), ("fc_bias", (10,))]
# float32 rounding through a few steps of products, Gram-Schmidt and error feedback: measured
# gaps are 2.5e-6 (2 ranks) and 3.0e-6 (3 ranks) of a tensor's largest value; a wrong sign or a lost
# error term is 1e-1 or more.
TOLERANCE = 1e-5


def matrix_shape(shape):
    return shape[0], math.prod(shape[1:])


def compressed(shape, rank):  # powerSGD_hook's _should_compress, min_compression_rate 2
    n, m = matrix_shape(shape)
    k = min(n, m, rank)
    return k * (n + m) * 2 < n * m


def make(work, ranks, steps, rank):
    g = torch.Generator().manual_seed(1234)
    out = {}
    for r in range(ranks):
        for s in range(steps):
            for name, shape in SHAPES:
                out[f"r{r}.s{s}.{name}"] = torch.randn(shape, generator=g)
    for name, shape in SHAPES:
        if compressed(shape, rank):
            n, m = matrix_shape(shape)
            out[f"q0.{name}"] = torch.randn(m, min(n, m, rank), generator=g)
    write_safetensors(os.path.join(work, "in.safetensors"), out)


class Bucket:  # what the hook asks of a dist.GradBucket, which Python cannot construct
    def __init__(self, buffer, views):
        self._buffer, self._views = buffer, views

    def buffer(self):
        return self._buffer

    def index(self):
        return 0

    def is_last(self):
        return True

    def gradients(self):
        return self._views


def worker(r, work, ranks, rank, start):
    dist.init_process_group("gloo", init_method="file://" + os.path.join(work, "store"), rank=r, world_size=ranks)
    inputs = read_safetensors(os.path.join(work, "in.safetensors"))
    steps = max(int(k.split(".")[1][1:]) for k in inputs if k.startswith("r0.")) + 1
    state = powersgd.PowerSGDState(process_group=None, matrix_approximation_rank=rank, start_powerSGD_iter=start,
                                   min_compression_rate=2, use_error_feedback=True, warm_start=True)
    # The first Q's, laid out as the hook lays them out (grouped by matrix shape, in order of first
    # appearance), so that it takes them instead of drawing its own.
    groups = {}
    for name, shape in SHAPES:
        if compressed(shape, rank):
            groups.setdefault(matrix_shape(shape), []).append(name)
    order = [name for names in groups.values() for name in names]
    state.q_memory_dict[0] = torch.cat([inputs[f"q0.{name}"].float().flatten() for name in order])
    state.p_memory_dict[0] = torch.empty(sum(matrix_shape(dict(SHAPES)[n])[0] * inputs[f"q0.{n}"].shape[1]
                                             for n in order))
    result = {}
    for s in range(steps):
        buffer = torch.cat([inputs[f"r{r}.s{s}.{name}"].float().flatten() for name, _ in SHAPES])
        views, at = [], 0
        for _, shape in SHAPES:
            views.append(buffer[at:at + math.prod(shape)].view(shape))
            at += math.prod(shape)
        powersgd.powerSGD_hook(state, Bucket(buffer, views)).wait()
        for (name, _), v in zip(SHAPES, views):
            result[f"s{s}.{name}"] = v.clone()
    if r == 0:
        write_safetensors(os.path.join(work, "torch.safetensors"), result)
    dist.barrier()
    dist.destroy_process_group()


def compare(work, ranks, start):
    outs = [read_safetensors(os.path.join(work, f"ringtrain.rank{r}.safetensors")) for r in range(ranks)]
    want = read_safetensors(os.path.join(work, "torch.safetensors"))
    failures, worst = [], 0.0
    for r in range(1, ranks):
        differ = [k for k in outs[0] if not torch.equal(outs[0][k], outs[r][k])]
        if differ:
            failures.append(f"rank {r}'s averages differ from rank 0's in {len(differ)} tensors, first {differ[0]}")
    for key, w in want.items():
        got = outs[0][key]
        gap = (got - w).abs().max().item() / w.abs().max().item()
        worst = max(worst, gap)
        if gap > TOLERANCE:
            step = int(key.split(".")[0][1:])
            failures.append(f"{key} ({'compressed step' if step >= start else 'plain step'}): largest gap "
                            f"{gap:.3g} of its largest value, over {TOLERANCE}")
    print(f"powersgd_oracle: {ranks} ranks, {len(want)} tensors of {len(want) // len(SHAPES)} steps; "
          f"worst gap to PyTorch {worst:.3g} of a tensor's largest value")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    mode, work, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "make":
        make(work, ranks, int(sys.argv[4]), int(sys.argv[5]))
    elif mode == "torch":
        mp.spawn(worker, args=(work, ranks, int(sys.argv[4]), int(sys.argv[5])), nprocs=ranks)
    else:
        sys.exit(compare(work, ranks, int(sys.argv[4])))
