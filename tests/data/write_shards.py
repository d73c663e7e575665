"""Writes an image folder (ROOT/<class>/<file>) as WebDataset tar shards with Python's tarfile,
independently of ringtrain's writer: the samples in the folder index's order (classes sorted,
files sorted), <key>.<ext> and <key>.cls per sample, N samples per shard.

usage: write_shards.py ROOT OUT --format gnu|pax [--per-shard N] [--long-names] [--classes]
--long-names puts each sample under a 120-character folder, so every name needs GNU's long-name
member or a PAX header; --classes writes OUT/classes.txt."""
import argparse
import io
import os
import tarfile

p = argparse.ArgumentParser()
p.add_argument("root")
p.add_argument("out")
p.add_argument("--format", choices=["gnu", "pax"], required=True)
p.add_argument("--per-shard", type=int, default=5)
p.add_argument("--long-names", action="store_true")
p.add_argument("--classes", action="store_true")
a = p.parse_args()

classes = sorted(d for d in os.listdir(a.root) if os.path.isdir(os.path.join(a.root, d)) and not d.startswith("."))
samples = []
for label, c in enumerate(classes):
    files = []
    for dirpath, _, names in os.walk(os.path.join(a.root, c)):
        files += [os.path.relpath(os.path.join(dirpath, n), a.root) for n in names if not n.startswith(".")]
    samples += [(f, label) for f in sorted(files)]

os.makedirs(a.out, exist_ok=True)
fmt = tarfile.GNU_FORMAT if a.format == "gnu" else tarfile.PAX_FORMAT
prefix = "d" * 120 + "/" if a.long_names else ""


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


for s in range(0, len(samples), a.per_shard):
    with tarfile.open(os.path.join(a.out, f"part-{s // a.per_shard:04d}.tar"), "w", format=fmt) as tar:
        for i, (f, label) in enumerate(samples[s:s + a.per_shard]):
            key = f"{prefix}{s + i:06d}"
            add(tar, key + os.path.splitext(f)[1].lower(), open(os.path.join(a.root, f), "rb").read())
            add(tar, key + ".cls", str(label).encode())
if a.classes:
    open(os.path.join(a.out, "classes.txt"), "w").write("".join(c + "\n" for c in classes))
