# The PyTorch side of tests/app/finetune_test.cpp: torchvision's resnet18 fine-tuned as its
# transfer-learning recipe does. Usage: DIR STEPS LR MOMENTUM WEIGHT_DECAY HEAD_LR_SCALE FROZEN
# (comma-separated module-name prefixes). Loads DIR/init.safetensors (ringtrain's starting state:
# the file's body and a new head) strictly; freezes the FROZEN modules (requires_grad False,
# batch norm in eval mode); trains STEPS steps of SGD with momentum, weight decay on the trainable
# weights only and the classifier's rate scaled, on DIR/batches.safetensors ("batch.<k>.input",
# "batch.<k>.target"); writes DIR/reference.safetensors: "step<k>.<name>" for every tensor of the
# state dict after step k, computed in float64, and "budget.step<k>.<name>", float32 PyTorch's
# largest error against it (NCHW and channels_last), what float32 rounding makes of it.
import copy, os, sys
import torch, torchvision
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import torch_reference  # noqa: E402
from torchvision_oracle import write_safetensors  # noqa: E402


def under(name, prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def train(model, batches, steps, lr, momentum, wd, head_scale, frozen, dtype, channels_last=False):
    model = copy.deepcopy(model).to(dtype)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    model.train()
    for name, m in model.named_modules():
        if under(name, frozen) and isinstance(m, nn.BatchNorm2d):
            m.eval()
    groups = {}
    for name, p in model.named_parameters():
        if under(name, frozen):
            p.requires_grad_(False)
            continue
        decay = wd if p.dim() > 1 else 0.0
        rate = lr * (head_scale if name.startswith("fc.") else 1.0)
        groups.setdefault((decay, rate), []).append(p)
    opt = torch.optim.SGD([{"params": ps, "weight_decay": d, "lr": r} for (d, r), ps in groups.items()],
                          lr=lr, momentum=momentum)
    states = []
    for k in range(steps):
        x, target = batches[k]
        x = x.to(dtype)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), target).backward()
        opt.step()
        states.append({n: t.detach().double().contiguous() for n, t in model.state_dict().items()
                       if t.is_floating_point()})
    return states


def main(d, steps, lr, momentum, wd, head_scale, frozen):
    torch.set_num_threads(2)
    init = torch_reference.read_safetensors(d + "/init.safetensors")
    tensors = torch_reference.read_safetensors(d + "/batches.safetensors")
    steps = int(steps)
    batches = [(tensors["batch.%d.input" % k], tensors["batch.%d.target" % k]) for k in range(steps)]
    model = torchvision.models.resnet18(weights=None, num_classes=init["fc.weight"].shape[0])
    model.conv1 = nn.Conv2d(init["conv1.weight"].shape[1], 64, 7, 2, 3, bias=False)
    model.load_state_dict(init, strict=True)
    args = (batches, steps, float(lr), float(momentum), float(wd), float(head_scale), [p for p in frozen.split(",") if p])
    ref = train(model, *args, torch.float64)
    f32 = train(model, *args, torch.float32)
    cl = train(model, *args, torch.float32, channels_last=True)
    out = {}
    for k in range(steps):
        for name, want in ref[k].items():
            out["step%d.%s" % (k + 1, name)] = want
            err = max((f32[k][name] - want).abs().max().item(), (cl[k][name] - want).abs().max().item())
            out["budget.step%d.%s" % (k + 1, name)] = torch.tensor(err, dtype=torch.float64)
    write_safetensors(d + "/reference.safetensors", out)


if __name__ == "__main__":
    main(*sys.argv[1:])
