#!/usr/bin/env python3
"""Runs every command of the tour's chapters 1-3, as written in their ```sh blocks, so the docs
cannot drift from the code. Reduced size: `./build/` becomes the build directory under test, and
a training command (one with --config configs/teaching/...) gets a tiny stand-in for
Fashion-MNIST made here, one epoch and a scratch checkpoint directory. Each command must exit 0
and print what its chapter says it prints.

usage: tour_commands_test.py SOURCE_DIR BINARY_DIR
"""
import gzip, os, re, struct, subprocess, sys, tempfile

source, binary = sys.argv[1], sys.argv[2]
chapters = sorted(f for f in os.listdir(os.path.join(source, "docs/tour")) if re.match(r"0[1-3]-.*\.md$", f))
assert len(chapters) == 3, f"expected chapters 01-03 in docs/tour, found {chapters}"


def commands(path):
    """Lines of ```sh blocks, with backslash continuations joined and comments dropped."""
    out, block, pending = [], False, ""
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("```"):
            block = line.strip() == "```sh"
            continue
        if not block or not line.strip() or line.lstrip().startswith("#"):
            continue
        pending += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            out.append(pending.strip())
            pending = ""
    return out


def write_idx(folder, prefix, count, seed):
    """An IDX pair like Fashion-MNIST's: 28x28 images whose brightness band depends on the label."""
    labels = [(i * 7 + seed) % 10 for i in range(count)]
    pixels = bytearray()
    for i, label in enumerate(labels):
        for p in range(28 * 28):
            pixels.append((40 + 20 * label + (p * 13 + i * 5) % 30) if (p // 28) % 10 == label else (p * 7 + i) % 25)
    with gzip.open(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, count, 28, 28) + bytes(pixels))
    with gzip.open(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">II", 2049, count) + bytes(labels))


scratch = tempfile.mkdtemp(prefix="ringtrain_tour_")
data = os.path.join(scratch, "data")
os.makedirs(data)
write_idx(data, "train", 512, 1)
write_idx(data, "t10k", 128, 2)
env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

ran = 0
for chapter in chapters:
    for k, command in enumerate(commands(os.path.join(source, "docs/tour", chapter))):
        run = command.replace("./build/", binary.rstrip("/") + "/")
        if "--config configs/teaching/" in run:
            run += (f" --set data.dir={data} --set train.epochs=1"
                    f" --set checkpoint.dir={os.path.join(scratch, f'{chapter[:2]}_{k}')}")
        print(f"{chapter}: {command}", flush=True)
        r = subprocess.run(run, shell=True, cwd=source, env=env, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            sys.exit(f"FAILED ({r.returncode}): {run}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        expect = "whatever P is" if "ring-demo" in run else "epoch 1/1:" if "--config" in run else ""
        if expect and expect not in r.stdout:
            sys.exit(f"FAILED: '{expect}' not in the output of {run}\n{r.stdout[-3000:]}")
        ran += 1
print(f"ran {ran} commands from {', '.join(chapters)}")
assert ran >= 6, "the tour's chapters 1-3 should hold at least six commands"
