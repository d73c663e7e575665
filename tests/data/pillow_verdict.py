#!/usr/bin/env python3
"""Pillow's verdict on each image file of a folder, for tests/data/pillow_verdict_test.cpp: what
torchvision's ImageFolder does with it, Image.open(f).load() then convert("RGB").

  pillow_verdict.py DIR

Writes DIR/verdicts.txt, a line per file (in name order):
  NAME ok W H          and DIR/NAME.rgb, its W*H*3 bytes of RGB
  NAME refused WORDS   Pillow's exception and its message
"""
import os, sys

from PIL import Image

folder = sys.argv[1]
lines = []
for name in sorted(os.listdir(folder)):
    path = os.path.join(folder, name)
    if name.endswith((".rgb", ".txt")) or not os.path.isfile(path):
        continue
    try:
        with Image.open(path) as im:
            im.load()
            rgb = im.convert("RGB")
    except Exception as e:  # what ImageFolder's loader would raise: the file is refused
        words = f"{type(e).__name__}: {e}".replace("\n", " ")
        lines.append(f"{name} refused {words}")
        continue
    with open(path + ".rgb", "wb") as f:
        f.write(rgb.tobytes())
    lines.append(f"{name} ok {rgb.width} {rgb.height}")
with open(os.path.join(folder, "verdicts.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
