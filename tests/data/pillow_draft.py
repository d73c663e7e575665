#!/usr/bin/env python3
"""Pillow's side of the scaled-decoding test (Note [Scaled decoding] in data/image_sample.cpp):
for each line "JPEG X Y W H SCALE SIZE" of LIST, the JPEG opened with Image.draft("RGB", (W' // SCALE,
H' // SCALE)) (W', H' the image's size: Pillow's own rule then picks SCALE, which is checked),
converted to RGB, and resized to SIZE x SIZE with Image.BILINEAR from the box (X, Y, X + W, Y + H)
divided by SCALE (at SCALE 1 cut out first, then resized, as torchvision's resized_crop does); the
pixels appended to OUT as raw RGB bytes.

  pillow_draft.py LIST OUT      (exit 77 where PIL is missing)
"""
import sys

try:
    from PIL import Image
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

with open(sys.argv[1]) as lines, open(sys.argv[2], "wb") as out:
    for line in lines:
        path, x, y, w, h, a, size = line.split()
        x, y, w, h, a, size = map(int, (x, y, w, h, a, size))
        img = Image.open(path)
        full_w, full_h = img.size
        img.draft("RGB", (full_w // a, full_h // a))
        want = ((full_w + a - 1) // a, (full_h + a - 1) // a)
        assert img.size == want, f"{path}: draft gave {img.size}, want {want} at 1/{a}"
        img = img.convert("RGB")
        if a == 1:  # torchvision's resized_crop: the box cut out, then resized
            out.write(img.crop((x, y, x + w, y + h)).resize((size, size), Image.BILINEAR).tobytes())
        else:
            out.write(img.resize((size, size), Image.BILINEAR, box=(x / a, y / a, (x + w) / a, (y + h) / a)).tobytes())
