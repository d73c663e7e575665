#!/usr/bin/python3
"""Converts weights between PyTorch checkpoints (.pt/.pth) and safetensors, the format ringtrain
reads and writes. Needs only torch (Debian's python3-torch); the safetensors format is handled
here with struct and json.

  convert_weights.py to-safetensors IN.pth OUT.safetensors
  convert_weights.py to-torch IN.safetensors OUT.pth [--keep-optimizer]

to-safetensors takes a state dict, or a dict holding one under "state_dict" or "model" (the usual
training-script checkpoints), and strips a DataParallel "module." prefix, so
torchvision.models.resnet101().state_dict() saved with torch.save converts as is.
to-torch writes a plain state dict that load_state_dict(strict=True) accepts; a ringtrain
checkpoint's momentum buffers ("optimizer.momentum.*") are left out unless --keep-optimizer.
The written file's tensors are checked against what was read before the command succeeds.
"""
import json, os, struct, sys
import torch

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}


def fail(message):
    sys.exit("convert_weights: " + message)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        fail(f"{path}: {len(data)} bytes is too short for a safetensors header length")
    n = struct.unpack("<Q", data[:8])[0]
    if 8 + n > len(data):
        fail(f"{path}: header length {n} runs past the end of the file ({len(data)} bytes)")
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = memoryview(data)[8 + n:]
    tensors = {}
    for name, t in header.items():
        if t["dtype"] not in DTYPES:
            fail(f"{path}: tensor '{name}' has dtype {t['dtype']}, not one of {', '.join(DTYPES)}")
        begin, end = t["data_offsets"]
        if not 0 <= begin <= end <= len(body):
            fail(f"{path}: tensor '{name}' offsets [{begin}, {end}) lie outside the {len(body)}-byte buffer")
        dtype = DTYPES[t["dtype"]]
        count = 1
        for d in t["shape"]:
            count *= d
        if end - begin != count * torch.empty((), dtype=dtype).element_size():
            fail(f"{path}: tensor '{name}' has {end - begin} bytes for shape {t['shape']} of {t['dtype']}")
        raw = bytearray(body[begin:end])
        flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(t["shape"]).clone()
    return tensors


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, t in tensors.items():
        if t.dtype not in NAMES:
            fail(f"tensor '{name}' has dtype {t.dtype}, which safetensors cannot hold")
        size = t.numel() * t.element_size()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for t in tensors.values():
            # bytes of the tensor as stored: a view as uint8 keeps bfloat16 and bool exact.
            f.write(t.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes()
                    if t.numel() else b"")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def state_dict_of(obj, path):
    for key in ("state_dict", "model"):
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            obj = obj[key]
    if not isinstance(obj, dict) or not all(torch.is_tensor(v) for v in obj.values()):
        fail(f"{path}: expected a state dict of tensors (or one under 'state_dict' or 'model'), got {type(obj).__name__}")
    return {k[len("module."):] if k.startswith("module.") else k: v for k, v in obj.items()}


def same(a, b):
    return a.keys() == b.keys() and all(a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and
                                        torch.equal(a[k], b[k]) for k in a)


def main(argv):
    if len(argv) < 3 or argv[0] not in ("to-safetensors", "to-torch"):
        fail("usage: convert_weights.py to-safetensors IN.pth OUT.safetensors | "
             "to-torch IN.safetensors OUT.pth [--keep-optimizer]")
    mode, src, dst = argv[:3]
    if mode == "to-safetensors":
        tensors = state_dict_of(torch.load(src, map_location="cpu"), src)
        write_safetensors(dst, tensors)
        if not same(tensors, read_safetensors(dst)):
            fail(f"{dst}: read back differs from {src}")
    else:
        tensors = read_safetensors(src)
        if "--keep-optimizer" not in argv[3:]:
            tensors = {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}
        torch.save(tensors, dst)
        if not same(tensors, torch.load(dst, map_location="cpu")):
            fail(f"{dst}: read back differs from {src}")
    print(f"convert_weights: {len(tensors)} tensors, {sum(t.numel() for t in tensors.values())} values: {src} -> {dst}")


if __name__ == "__main__":
    main(sys.argv[1:])
