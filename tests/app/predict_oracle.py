# The torchvision side of predict_test.sh: writes LeNet weights (torch's own initialisation, seed
# 0, scaled up), two images (a gray PNG and an RGB JPEG, neither at the model's size), and what `ringtrain
# predict` must print for them: torchvision's Resize(32), CenterCrop(28), Grayscale, ToTensor,
# Normalize(0.2860, 0.3530), LeNet in eval mode, softmax, the top 5.
# Usage: predict_oracle.py WORK_DIR
import os, sys
import numpy as np
import torch
from PIL import Image
from torchvision import transforms

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models"))
from torch_reference import build, write_safetensors  # noqa: E402

work = sys.argv[1]
torch.manual_seed(0)
model = build("lenet").eval()
with torch.no_grad():  # sharper than the initialisation, so the top 5 depends on every pixel
    for p in model.parameters():
        p.mul_(3.0)
write_safetensors(os.path.join(work, "weights.safetensors"), model.state_dict())
rng = np.random.default_rng(1)
yy, xx = np.mgrid[0:33, 0:41]
gray = (127 + 60 * np.sin(xx / 5.0) * np.cos(yy / 7.0) + rng.normal(0, 20, xx.shape)).clip(0, 255).astype(np.uint8)
Image.fromarray(gray, "L").save(os.path.join(work, "a.png"))
Image.fromarray(rng.integers(0, 256, (45, 52, 3), dtype=np.uint8), "RGB").save(os.path.join(work, "b.jpg"), quality=90)

t = transforms.Compose([transforms.Resize(32), transforms.CenterCrop(28), transforms.Grayscale(),
                        transforms.ToTensor(), transforms.Normalize([0.2860], [0.3530])])
for name in ("a.png", "b.jpg"):
    path = os.path.join(work, name)
    x = t(Image.open(path).convert("RGB")).unsqueeze(0)
    with torch.no_grad():
        p = torch.softmax(model(x).double(), dim=1)[0]
    top = torch.argsort(p, descending=True)[:5]
    print(path)
    for r, k in enumerate(top.tolist()):
        print("  %d. %6.2f%%  class %d" % (r + 1, 100 * p[k].item(), k))
