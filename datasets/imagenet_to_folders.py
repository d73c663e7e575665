#!/usr/bin/env python3
"""Lays out ImageNet (ILSVRC 2012) from its official archives as the class folders ringtrain's
data.source = "imagefolder" reads (and torchvision's ImageFolder):

  OUT/train/<wnid>/<file>.JPEG   1,281,167 images in 1000 folders
  OUT/val/<wnid>/<file>.JPEG        50,000 images in the same 1000 folders

  datasets/imagenet_to_folders.py ARCHIVES OUT [--val-labels FILE]

ARCHIVES holds what image-net.org hands out: ILSVRC2012_img_train.tar (1000 inner tars, one per
class), ILSVRC2012_img_val.tar (50,000 JPEGs in one folder) and ILSVRC2012_devkit_t12.tar.gz
(whose data/meta.mat and data/ILSVRC2012_validation_ground_truth.txt give each validation image's
class). Reading meta.mat needs SciPy (Debian: python3-scipy); instead, --val-labels FILE may give
"<image file name> <wnid>" per line (Kaggle's LOC_val_solution.csv is accepted as is). The
archives are streamed, never unpacked beside the output (about 150 GB of output, 150 GB of input).
An interrupted run can be started again: files already in place with the right size are kept.
Needs only the standard library (and SciPy for meta.mat).
"""
import argparse
import csv
import os
import sys
import tarfile

TRAIN, VAL, DEVKIT = "ILSVRC2012_img_train.tar", "ILSVRC2012_img_val.tar", "ILSVRC2012_devkit_t12.tar.gz"
EXPECTED = {"train": 1281167, "val": 50000}


def extract_member(tar, member, path):
    """Writes one archive member to path (atomically), unless a file of its size is already there."""
    if os.path.exists(path) and os.path.getsize(path) == member.size:
        return
    tmp = path + ".part"
    with tar.extractfile(member) as src, open(tmp, "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
    os.replace(tmp, path)


def lay_out_train(archive, out):
    with tarfile.open(archive, "r|") as outer:  # streamed: 1000 inner tars, n01440764.tar ...
        n = 0
        for inner in outer:
            if not inner.isfile() or not inner.name.endswith(".tar"):
                continue
            n += 1
            wnid = os.path.basename(inner.name)[:-4]
            folder = os.path.join(out, "train", wnid)
            os.makedirs(folder, exist_ok=True)
            with tarfile.open(fileobj=outer.extractfile(inner), mode="r|") as images:
                for m in images:
                    if m.isfile():
                        extract_member(images, m, os.path.join(folder, os.path.basename(m.name)))
            print(f"train: {n} classes", end="\r", flush=True)
    print()


def val_labels_from_devkit(devkit):
    """{validation file name: wnid} from the devkit's ground truth (ILSVRC2012_ID per image, in
    file-name order) and meta.mat (ILSVRC2012_ID -> WNID)."""
    try:
        import io
        from scipy.io import loadmat
    except ImportError:
        sys.exit(f"imagenet_to_folders: reading {DEVKIT}'s meta.mat needs SciPy (apt install python3-scipy), "
                 "or give --val-labels FILE")
    with tarfile.open(devkit) as tar:
        def read(name):
            member = next(m for m in tar.getmembers() if m.name.endswith(name))
            return tar.extractfile(member).read()
        synsets = loadmat(io.BytesIO(read("data/meta.mat")), squeeze_me=True)["synsets"]
        truth = read("data/ILSVRC2012_validation_ground_truth.txt").decode().split()
    wnid_of = {int(s["ILSVRC2012_ID"]): str(s["WNID"]) for s in synsets if int(s["ILSVRC2012_ID"]) <= 1000}
    return {f"ILSVRC2012_val_{i:08d}.JPEG": wnid_of[int(t)] for i, t in enumerate(truth, 1)}


def val_labels_from_file(path):
    """{file name: wnid} from lines "<file> <wnid>", or Kaggle's CSV (ImageId, "<wnid> x y ...")."""
    labels = {}
    with open(path, newline="") as f:
        for row in csv.reader(f, delimiter="," if path.endswith(".csv") else " "):
            if len(row) < 2 or row[0] == "ImageId":
                continue
            name, wnid = row[0], row[1].split()[0]
            labels[name if name.endswith(".JPEG") else name + ".JPEG"] = wnid
    return labels


def lay_out_val(archive, labels, out):
    with tarfile.open(archive, "r|") as tar:
        n = 0
        for m in tar:
            if not m.isfile():
                continue
            n += 1
            name = os.path.basename(m.name)
            if name not in labels:
                sys.exit(f"imagenet_to_folders: {archive}: {name} has no class in the validation labels")
            folder = os.path.join(out, "val", labels[name])
            os.makedirs(folder, exist_ok=True)
            extract_member(tar, m, os.path.join(folder, name))
            print(f"val: {n} images", end="\r", flush=True)
    print()


def check(out):
    for split, want in EXPECTED.items():
        root = os.path.join(out, split)
        classes = sorted(os.listdir(root))
        files = sum(len(os.listdir(os.path.join(root, c))) for c in classes)
        status = "ok" if (len(classes), files) == (1000, want) else f"expected 1000 classes and {want} images"
        print(f"{root}: {len(classes)} classes, {files} images ({status})")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("archives", help=f"folder with {TRAIN}, {VAL} and {DEVKIT}")
    p.add_argument("out", help="where train/ and val/ are made")
    p.add_argument("--val-labels", help="'<file> <wnid>' lines (or Kaggle's LOC_val_solution.csv) instead of the devkit")
    a = p.parse_args()
    need = [TRAIN, VAL] + ([] if a.val_labels else [DEVKIT])
    missing = [n for n in need if not os.path.isfile(os.path.join(a.archives, n))]
    if missing:
        sys.exit(f"imagenet_to_folders: {a.archives} lacks {', '.join(missing)}")
    labels = val_labels_from_file(a.val_labels) if a.val_labels else val_labels_from_devkit(os.path.join(a.archives, DEVKIT))
    lay_out_train(os.path.join(a.archives, TRAIN), a.out)
    lay_out_val(os.path.join(a.archives, VAL), labels, a.out)
    check(a.out)


if __name__ == "__main__":
    main()
