#!/usr/bin/env python3
"""Exports Fashion-MNIST's IDX files as PNG class folders, the layout of data.source =
"imagefolder" (ROOT/train/<class>/<n>.png and ROOT/val/<class>/<n>.png), so the folder pipeline
can be checked on a real data set against the IDX pipeline. Uses only the standard library.

  datasets/fashion_mnist_to_folders.py OUT_DIR [--idx-dir /usr/share/datasets/fashion-mnist] [--limit N]
      [--classes 5,6,7,8,9] [--train-per-class N]

--classes exports only those classes (a split of the data set's classes for fine-tuning: train on
some, fine-tune on the others); --train-per-class keeps the first N training images of each.
"""
import argparse, gzip, os, struct, sys, zlib

CLASSES = ["0_tshirt_top", "1_trouser", "2_pullover", "3_dress", "4_coat", "5_sandal", "6_shirt", "7_sneaker",
           "8_bag", "9_ankle_boot"]  # numbered, so sorted names keep the IDX labels


def read_idx(path):
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    dims = raw[3]
    shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
    return shape, raw[4 + 4 * dims:]


def png(width, height, gray):
    """An 8-bit grayscale PNG."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xffffffff)
    rows = b"".join(b"\0" + gray[y * width:(y + 1) * width] for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b""))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--idx-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--limit", type=int, default=0, help="export only the first N images of each split")
    p.add_argument("--classes", default="", help="comma-separated class numbers to export (default: all)")
    p.add_argument("--train-per-class", type=int, default=0, help="at most N training images of each class")
    a = p.parse_args()
    wanted = [int(c) for c in a.classes.split(",")] if a.classes else list(range(len(CLASSES)))
    for split, prefix in (("train", "train"), ("val", "t10k")):
        (n, h, w), pixels = read_idx(os.path.join(a.idx_dir, f"{prefix}-images-idx3-ubyte.gz"))
        (m,), labels = read_idx(os.path.join(a.idx_dir, f"{prefix}-labels-idx1-ubyte.gz"))
        if n != m:
            sys.exit(f"{prefix}: {n} images but {m} labels")
        count = min(n, a.limit) if a.limit else n
        for c in wanted:
            os.makedirs(os.path.join(a.out, split, CLASSES[c]), exist_ok=True)
        taken = [0] * len(CLASSES)
        for i in range(count):
            if labels[i] not in wanted or (split == "train" and 0 < a.train_per_class <= taken[labels[i]]):
                continue
            taken[labels[i]] += 1
            with open(os.path.join(a.out, split, CLASSES[labels[i]], f"{i:05d}.png"), "wb") as f:
                f.write(png(w, h, pixels[i * h * w:(i + 1) * h * w]))
        print(f"{split}: {sum(taken)} images in {os.path.join(a.out, split)}")


if __name__ == "__main__":
    main()
