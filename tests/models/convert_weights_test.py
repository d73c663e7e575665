# scripts/convert_weights.py end to end, against torchvision: usage RINGTRAIN_BINARY SOURCE_DIR.
# A torchvision resnet18 saved with torch.save converts to safetensors, `ringtrain forward --eval`
# on it gives torchvision's own eval-mode logits, and converting back gives a state dict that
# load_state_dict(strict=True) accepts with every tensor equal to the original. Exit 77 (skipped)
# without torch and torchvision.
import os, subprocess, sys, tempfile

try:
    import torch, torchvision
except ImportError as e:
    print("skipped: no torch/torchvision in /usr/bin/python3:", e)
    sys.exit(77)

binary, source = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(source, "scripts"))
import convert_weights  # noqa: E402

torch.manual_seed(3)
model = torchvision.models.resnet18(weights=None, num_classes=10).eval()
for m in model.modules():  # non-trivial running statistics, so eval mode uses them
    if isinstance(m, torch.nn.BatchNorm2d):
        m.running_mean.uniform_(-0.2, 0.2)
        m.running_var.uniform_(0.5, 1.5)
x = torch.randn(2, 3, 64, 64)
with torch.no_grad():
    want = model(x)

with tempfile.TemporaryDirectory() as d:
    pth, st, batch, out, back = (os.path.join(d, f) for f in
                                 ("w.pth", "w.safetensors", "b.safetensors", "o.safetensors", "back.pth"))
    torch.save({"epoch": 3, "state_dict": {"module." + k: v for k, v in model.state_dict().items()}}, pth)
    py = [sys.executable, os.path.join(source, "scripts", "convert_weights.py")]
    subprocess.run(py + ["to-safetensors", pth, st], check=True)
    convert_weights.write_safetensors(batch, {"input": x})
    subprocess.run([binary, "forward", "--model", "resnet18", "--set", "model.num_classes=10", "--weights", st,
                    "--batch", batch, "--out", out, "--eval"], check=True)
    got = convert_weights.read_safetensors(out)["logits"]
    err = (got - want).abs().max().item()
    scale = want.abs().max().item()
    print(f"ringtrain vs torchvision eval logits: max error {err:.3e}, max |logit| {scale:.3e}")
    assert err <= 1e-4 * scale, f"logits differ: {err} > 1e-4 x {scale}"

    subprocess.run(py + ["to-torch", st, back], check=True)
    restored = torchvision.models.resnet18(weights=None, num_classes=10)
    restored.load_state_dict(torch.load(back), strict=True)
    for k, v in model.state_dict().items():
        assert torch.equal(restored.state_dict()[k], v), f"{k} changed in the round trip"
    print(f"round trip: {len(model.state_dict())} tensors equal")
print("1 passed, 0 failed")
