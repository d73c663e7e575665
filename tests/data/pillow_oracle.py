#!/usr/bin/env python3
"""Writes images of every kind the image pipeline promises to read, each with Pillow's decoding
as 8-bit RGB, and torchvision transforms of one photograph-like image on given crop boxes, for
tests/data/image_pipeline_test.cpp to compare against stb_image and ringtrain's transforms.

  pillow_oracle.py OUT_DIR

OUT_DIR/manifest.txt lines:
  decode NAME FILE RGB_FILE     (RGB_FILE: "W H\\n" then W*H*3 bytes)
  crop SOURCE_RGB X Y W H OUT_W OUT_H RGB_FILE   (torchvision resized_crop, bilinear)
  eval SOURCE_RGB RESIZE CROP RGB_FILE           (Resize(RESIZE) then CenterCrop(CROP))
  boxes W H DRAWS MEAN_SCALE MEAN_LOG_RATIO      (RandomResizedCrop.get_params, defaults)
  photo NAME PATH RGB_FILE      (a real photo shipped by Debian's python3-skimage or
                                 python3-sklearn, where installed, and Pillow's decoding)
"""
import os, sys
import numpy as np
from PIL import Image
import math
import torch
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode, RandomResizedCrop

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
manifest = []


def save_rgb(name, arr):
    arr = np.ascontiguousarray(arr, dtype=np.uint8)
    path = os.path.join(out, name)
    with open(path, "wb") as f:
        f.write(b"%d %d\n" % (arr.shape[1], arr.shape[0]))
        f.write(arr.tobytes())
    return name


rng = np.random.default_rng(7)
h, w = 375, 500
yy, xx = np.mgrid[0:h, 0:w]
# A photograph stand-in: smooth gradients, a few hard edges, and noise (JPEG's hard cases).
photo = np.stack([(xx * 255 // w), (yy * 255 // h), ((xx + yy) % 256)], axis=-1).astype(np.float64)
photo[100:200, 150:300] = [200, 30, 60]
photo += rng.normal(0, 12, photo.shape)
photo = np.clip(photo, 0, 255).astype(np.uint8)
rgb = Image.fromarray(photo, "RGB")

cases = {
    "rgb.png": (rgb, {}),
    "gray.png": (rgb.convert("L"), {}),
    "gray_alpha.png": (Image.merge("LA", [rgb.convert("L"), Image.fromarray(photo[:, :, 0])]), {}),
    "rgba.png": (Image.merge("RGBA", [*rgb.split(), Image.fromarray(photo[:, :, 2])]), {}),
    "palette.png": (rgb.convert("P", palette=Image.ADAPTIVE, colors=64), {}),
    "photo.jpg": (rgb, {"quality": 90}),
    "gray.jpg": (rgb.convert("L"), {"quality": 90}),
    "cmyk.jpg": (rgb.convert("CMYK"), {"quality": 90}),
    "rgb.bmp": (rgb, {}),
    "rgb.tga": (rgb, {}),
    "palette.gif": (rgb.convert("P", palette=Image.ADAPTIVE, colors=128), {}),
}
for name, (img, opts) in cases.items():
    img.save(os.path.join(out, name), **opts)
    decoded = np.asarray(Image.open(os.path.join(out, name)).convert("RGB"))
    manifest.append(f"decode {name} {name} {save_rgb(name + '.rgb', decoded)}")

# 16-bit grayscale PNG: Pillow's convert("RGB") clips 16-bit values instead of scaling them, so
# the reference is the high byte of the 16-bit samples Pillow reads.
gray16 = (photo[:, :, 0].astype(np.uint16) * 257 + rng.integers(0, 256, (h, w), dtype=np.uint16))
Image.fromarray(gray16.astype(np.uint16)).save(os.path.join(out, "gray16.png"))
back = np.asarray(Image.open(os.path.join(out, "gray16.png"))).astype(np.uint32)
high = (back >> 8).astype(np.uint8)
manifest.append(f"decode gray16.png gray16.png {save_rgb('gray16.png.rgb', np.stack([high] * 3, -1))}")

# A GIF with two frames: the first is what counts.
frames = [rgb.convert("P", palette=Image.ADAPTIVE, colors=32), Image.fromarray(255 - photo).convert("P")]
frames[0].save(os.path.join(out, "two_frames.gif"), save_all=True, append_images=frames[1:])
first = np.asarray(Image.open(os.path.join(out, "two_frames.gif")).convert("RGB"))
manifest.append(f"decode two_frames.gif two_frames.gif {save_rgb('two_frames.gif.rgb', first)}")

# Transforms on the photograph's exact pixels (no codec in between).
source = save_rgb("source.rgb", photo)
boxes = [(0, 0, 500, 375, 224, 224), (37, 11, 201, 149, 224, 224), (250, 100, 60, 200, 224, 224),
         (3, 5, 17, 13, 224, 224), (10, 20, 400, 300, 299, 299), (0, 0, 500, 375, 500, 375)]
for k, (x, y, bw, bh, ow, oh) in enumerate(boxes):
    got = np.asarray(F.resized_crop(rgb, y, x, bh, bw, [oh, ow], InterpolationMode.BILINEAR))
    manifest.append(f"crop {source} {x} {y} {bw} {bh} {ow} {oh} {save_rgb(f'crop{k}.rgb', got)}")
for resize, crop in ((256, 224), (342, 299)):
    got = np.asarray(F.center_crop(F.resize(rgb, resize, InterpolationMode.BILINEAR), crop))
    manifest.append(f"eval {source} {resize} {crop} {save_rgb(f'eval{resize}.rgb', got)}")

# The distribution of random resized crop boxes: box area / image area and log(width / height).
torch.manual_seed(0)
for bw, bh in ((500, 375), (375, 500), (224, 224), (1000, 120)):
    img = Image.new("RGB", (bw, bh))
    draws, scale, log_ratio = 20000, 0.0, 0.0
    for _ in range(draws):
        i, j, h, w = RandomResizedCrop.get_params(img, [0.08, 1.0], [3 / 4, 4 / 3])
        scale += w * h / (bw * bh) / draws
        log_ratio += math.log(w / h) / draws
    manifest.append(f"boxes {bw} {bh} {draws} {scale:.6f} {log_ratio:.6f}")

# Real photographs and scans from Debian packages, where they are installed (nothing is fetched);
# RINGTRAIN_PHOTO_DIRS (colon-separated) adds folders, e.g. the packages' files unpacked elsewhere.
photo_dirs = ["/usr/lib/python3/dist-packages/skimage/data", "/usr/lib/python3/dist-packages/sklearn/datasets/images"]
photo_dirs += [d for d in os.environ.get("RINGTRAIN_PHOTO_DIRS", "").split(":") if d]
for folder in photo_dirs:
    if not os.path.isdir(folder):
        continue
    for name in sorted(os.listdir(folder)):
        if not name.lower().endswith((".png", ".jpg", ".jpeg", ".bmp", ".gif")):
            continue
        try:
            decoded = np.asarray(Image.open(os.path.join(folder, name)).convert("RGB"))
        except OSError:  # a damaged sample Pillow cannot read either
            continue
        manifest.append(f"photo {name} {os.path.join(folder, name)} {save_rgb('photo_' + name + '.rgb', decoded)}")

with open(os.path.join(out, "manifest.txt"), "w") as f:
    f.write("\n".join(manifest) + "\n")
