#!/usr/bin/env python3
"""An ImageNet-like JPEG tree from the sample photos Debian ships (scikit-image's data images,
scikit-learn's china.jpg and flower.jpg): N images of about 500x375 (ImageNet's typical size),
quality 90, each a random crop of a photo, resized, sometimes turned to portrait, in 10 classes.
With --synthetic it needs no photos: each image is smooth colour noise (a machine without Debian's
sample photos, such as a GPU machine checked by scripts/check_gpu.sh).

  make_photo_tree.py PHOTO_DIR... OUT [--images N]
  make_photo_tree.py --synthetic OUT [--images N]
"""
import argparse, glob, os, random, sys

from PIL import Image


def synthetic_photo(seed):
    """A 640x480 RGB image of smooth colour noise: JPEG work like a photo's, no photo needed."""
    bands = [Image.effect_noise((32, 24), 40 + 10 * ((seed + k) % 5)).resize((640, 480), Image.BICUBIC) for k in range(3)]
    return Image.merge("RGB", bands)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dirs", nargs="+", help="folders with photos, then the output folder")
    p.add_argument("--images", type=int, default=640)
    p.add_argument("--synthetic", action="store_true", help="smooth colour noise instead of photos")
    a = p.parse_args()
    *dirs, out = a.dirs
    photos = [synthetic_photo(seed) for seed in range(16)] if a.synthetic else []
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.jpg")) + glob.glob(os.path.join(d, "*.png"))):
            try:
                im = Image.open(path)
                im.load()
            except OSError:  # a damaged sample file: not a photo we need
                continue
            if min(im.size) >= 300 and im.mode in ("RGB", "RGBA", "L"):  # photographs, not tiny test patterns
                photos.append(im.convert("RGB"))
    if not photos:
        sys.exit(f"make_photo_tree: no photos of at least 300 pixels a side in {', '.join(dirs)}")
    rng = random.Random(0)
    for i in range(a.images):
        im = photos[i % len(photos)]
        w, h = im.size
        cw, ch = rng.randint(w * 2 // 3, w), rng.randint(h * 2 // 3, h)
        x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
        size = (500, 375) if rng.random() < 0.8 else (375, 500)
        folder = os.path.join(out, "class%d" % (i % 10))
        os.makedirs(folder, exist_ok=True)
        im.crop((x, y, x + cw, y + ch)).resize(size, Image.BICUBIC).save(os.path.join(folder, "%05d.jpg" % i), quality=90)
    print(f"make_photo_tree: {a.images} JPEGs from {len(photos)} photos in {out}")


if __name__ == "__main__":
    main()
