# The PyTorch side of tests/models/paper_parity_test.cpp. Usage: MODEL BATCH RES DIR [bf16].
# Builds torchvision's MODEL (resnet101, vgg16, vgg16_bn, inception_v3 with its aux head; or
# lenet, simple_cnn, resnet_mini of tests/models/torch_reference.py, on one channel and 10
# classes) with a fixed seed, dropout 0 and perturbed batch-norm parameters and statistics, and
# writes to DIR:
#   weights.safetensors    the state dict (F32; num_batches_tracked I64), what ringtrain loads
#   batch.safetensors      "input" (F32) and "target" (I64)
#   reference.safetensors  one training-mode step computed in float64 (model.double()): logits,
#                          aux_logits, loss (main + 0.4 aux), grad.<param>, every buffer after it;
#                          and budget.<name>: the larger of float32 PyTorch's two errors against
#                          that reference (NCHW and channels_last), max |f32 - f64| per tensor;
#                          with bf16, PyTorch's bf16 CPU autocast's errors instead.
import contextlib, copy, json, os, struct, sys
import torch, torchvision
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference  # noqa: E402

SMALL = ("lenet", "simple_cnn", "resnet_mini")

def write_safetensors(path, tensors):
    dtypes = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        blob = (t if t.dim() else t.reshape(1)).numpy().data.cast("B")  # no copy
        header[name] = {"dtype": dtypes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for b in blobs:
            f.write(b)

def build(name):
    if name in SMALL:
        return torch_reference.build(name)
    if name == "inception_v3":
        return torchvision.models.inception_v3(weights=None, aux_logits=True, init_weights=True)
    return getattr(torchvision.models, name)(weights=None)

def step(model, x, target, bf16=False):
    """One training-mode forward and backward; returns every output the test compares."""
    model.train()
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    with autocast:
        out = model(x)
    logits, aux = (out.logits, out.aux_logits) if hasattr(out, "aux_logits") else (out, None)
    logits, aux = logits.float(), (aux.float() if aux is not None else None)
    ce = nn.CrossEntropyLoss()
    loss = ce(logits, target) + (0.4 * ce(aux, target) if aux is not None else 0)
    loss.backward()
    result = {"logits": logits, "loss": loss}
    if aux is not None:
        result["aux_logits"] = aux
    result.update({"grad." + n: p.grad for n, p in model.named_parameters()})
    result.update(dict(model.named_buffers()))
    return {k: v.detach().contiguous() for k, v in result.items()}

def max_error(got, want):
    """max |got - want| in float64, a slice at a time: whole-tensor temporaries of VGG-16's
    classifier are gigabytes of fresh pages, and zeroing them took most of the oracle's time."""
    got, want, err = got.reshape(-1), want.reshape(-1), 0.0
    for i in range(0, want.numel(), 1 << 20):
        err = max(err, (got[i:i + (1 << 20)].double() - want[i:i + (1 << 20)]).abs().max().item())
    return err

def main(name, batch, res, out_dir, precision="fp32"):
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = build(name)
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0  # ringtrain's dropout stream cannot match torch's
        if isinstance(m, nn.BatchNorm2d):  # off their (1, 0, 0, 1) starting values, so each is seen
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(batch, 1 if name in SMALL else 3, res, res)
    target = torch.randint(0, 10 if name in SMALL else 1000, (batch,))
    write_safetensors(out_dir + "/weights.safetensors", model.state_dict())
    write_safetensors(out_dir + "/batch.safetensors", {"input": x, "target": target})

    ref = {k: v.double() for k, v in step(copy.deepcopy(model).double(), x.double(), target).items()}
    bf16 = precision == "bf16"
    budget = {k: 0.0 for k in ref}
    for layout in (torch.contiguous_format, torch.channels_last):
        got = step(copy.deepcopy(model).to(memory_format=layout), x.contiguous(memory_format=layout), target, bf16)
        for k, want in ref.items():
            budget[k] = max(budget[k], max_error(got[k], want))
        del got  # before the next run's copy of the model
    out = dict(ref)
    out.update({"budget." + k: torch.tensor(err, dtype=torch.float64) for k, err in budget.items()})
    write_safetensors(out_dir + "/reference.safetensors", out)

if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], *sys.argv[5:])
