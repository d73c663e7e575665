"""Exit 0 when safetensors checkpoints hold the same float32 tensors as a reference, each within a
relative tolerance of the reference tensor's largest magnitude; else say which differ and by how much.

usage: close_tensors.py TOLERANCE REFERENCE OTHER...
"""
import json
import struct
import sys


def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    out = {}
    for k, v in head.items():
        if k == "__metadata__" or v["dtype"] != "F32":
            continue
        s, e = v["data_offsets"]
        out[k] = struct.unpack("<%df" % ((e - s) // 4), b[8 + n + s: 8 + n + e])
    return out


tolerance, reference = float(sys.argv[1]), tensors(sys.argv[2])
if not reference:
    sys.exit(f"{sys.argv[2]} holds no float32 tensors")
for path in sys.argv[3:]:
    other = tensors(path)
    if other.keys() != reference.keys():
        sys.exit(f"{path} holds other tensors than {sys.argv[2]}")
    worst, where = 0.0, ""
    for k, a in reference.items():
        scale = 1e-6 + max(abs(t) for t in a)
        d = max(abs(x - y) for x, y in zip(a, other[k])) / scale
        if d > worst:
            worst, where = d, k
    if not worst <= tolerance:
        sys.exit(f"{path}: {where} differs from {sys.argv[2]} by {worst:.3g} of its largest magnitude "
                 f"(tolerance {tolerance:g})")
    print(f"{path}: {len(reference)} tensors within {worst:.2g} of {sys.argv[2]}")
