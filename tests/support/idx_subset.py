"""The first TRAIN and TEST samples of an MNIST-format data set, as uncompressed IDX files.

usage: idx_subset.py SRC DST TRAIN TEST
SRC holds {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz (Fashion-MNIST's names); DST, created
here, gets the same names without .gz, for tests that need a short epoch of real data.
"""
import gzip
import os
import struct
import sys

src, dst, train, test = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
os.makedirs(dst)
for name, count in (("train", train), ("t10k", test)):
    for kind, dims in (("images-idx3", 3), ("labels-idx1", 1)):
        raw = gzip.open(f"{src}/{name}-{kind}-ubyte.gz").read()
        shape = list(struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims]))
        item = 1
        for d in shape[1:]:
            item *= d
        shape[0] = count
        body = raw[4 + 4 * dims: 4 + 4 * dims + count * item]
        open(f"{dst}/{name}-{kind}-ubyte", "wb").write(raw[:4] + struct.pack(">" + "I" * dims, *shape) + body)
