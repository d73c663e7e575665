# The PyTorch side of tests/models/torch_parity_test.cpp: the same architectures as torch.nn
# modules under ringtrain's (torchvision's) parameter names. Usage: MODEL IN OUT. Loads IN's state
# dict strictly, runs one training-mode forward and backward in float64 on IN's "input"/"target",
# and writes logits, loss, "grad.<param>" and every buffer after the step to OUT (all F64).
import json, struct, sys
import torch
from torch import nn

DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "I32": torch.int32}

def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    return {name: torch.frombuffer(bytearray(data[8 + n + t["data_offsets"][0]:8 + n + t["data_offsets"][1]]),
                                   dtype=DTYPES[t["dtype"]]).reshape(t["shape"]).clone() for name, t in header.items()}

def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        values = t.detach().double().flatten().tolist()
        blobs.append(struct.pack("<%dd" % len(values), *values))
        header[name] = {"dtype": "F64", "shape": list(t.shape), "data_offsets": [offset, offset + len(blobs[-1])]}
        offset += len(blobs[-1])
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))

class Classifier(nn.Module):  # features, flatten, classifier: lenet and simple_cnn
    def __init__(self, features, classifier):
        super().__init__()
        self.features, self.classifier = nn.Sequential(*features), nn.Sequential(*classifier)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))

class BasicBlock(nn.Module):  # torchvision.models.resnet.BasicBlock
    def __init__(self, c, k, stride):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, k, 3, stride, 1, bias=False), nn.BatchNorm2d(k)
        self.conv2, self.bn2 = nn.Conv2d(k, k, 3, 1, 1, bias=False), nn.BatchNorm2d(k)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or c != k:
            self.downsample = nn.Sequential(nn.Conv2d(c, k, 1, stride, bias=False), nn.BatchNorm2d(k))

    def forward(self, x):
        y = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.relu(y + (self.downsample(x) if self.downsample is not None else x))

class ResNetMini(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv1, self.bn1, self.relu = nn.Conv2d(1, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()
        self.layer1 = nn.Sequential(BasicBlock(16, 16, 1))
        self.layer2 = nn.Sequential(BasicBlock(16, 32, 2))
        self.layer3 = nn.Sequential(BasicBlock(32, 64, 2))
        self.avgpool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(64, classes)

    def forward(self, x):
        x = self.layer3(self.layer2(self.layer1(self.relu(self.bn1(self.conv1(x))))))
        return self.fc(torch.flatten(self.avgpool(x), 1))

def build(name, classes=10):
    if name == "lenet":
        return Classifier([nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                           nn.MaxPool2d(2)],
                          [nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, classes)])
    if name == "simple_cnn":
        return Classifier([nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                           nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2)],
                          [nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.0), nn.Linear(128, classes)])
    if name == "resnet_mini":
        return ResNetMini(classes)
    raise SystemExit("unknown model " + name)

def main(model_name, in_path, out_path):
    tensors = read_safetensors(in_path)
    x, target = tensors.pop("input").double(), tensors.pop("target").long()
    model = build(model_name).double()
    model.load_state_dict(tensors, strict=True)
    model.train()
    logits = model(x)
    loss = nn.CrossEntropyLoss()(logits, target)
    loss.backward()
    out = {"logits": logits, "loss": loss}
    out.update({"grad." + name: p.grad for name, p in model.named_parameters()})
    out.update(dict(model.named_buffers()))
    write_safetensors(out_path, out)

if __name__ == "__main__":
    main(*sys.argv[1:])
