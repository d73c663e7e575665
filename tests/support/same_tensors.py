"""Exit 0 when two safetensors checkpoints hold the same tensors, bit for bit; else say which differ.

usage: same_tensors.py A B
"""
import json
import struct
import sys


def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    return {k: b[8 + n + v["data_offsets"][0]: 8 + n + v["data_offsets"][1]]
            for k, v in head.items() if k != "__metadata__"}


a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
differ = [k for k in a if a[k] != b.get(k)]
if not a or a.keys() != b.keys() or differ:
    sys.exit(f"{len(differ)} of {len(a)} tensors differ, first {differ[:3]}; names equal: {a.keys() == b.keys()}")
