#!/usr/bin/env python3
"""torchvision's side of bench/image_pipeline.sh: ImageFolder + DataLoader with the training
transforms of the ImageNet recipe (RandomResizedCrop, RandomHorizontalFlip, ToTensor, Normalize),
shuffled, W worker processes, as a training loop would consume it. One JSON line per pass.

  image_pipeline_torchvision.py ROOT [--workers W] [--batch B] [--size S] [--passes P] [--cold]

--cold empties the page cache before every pass (root only), so each pass reads from the disk.
"""
import argparse, json, os, statistics, time

import torch
from torchvision import datasets, transforms


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--cold", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(1)
    t = transforms.Compose([transforms.RandomResizedCrop(a.size), transforms.RandomHorizontalFlip(),
                            transforms.ToTensor(), transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    data = datasets.ImageFolder(a.root, transform=t)
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                                         drop_last=True, persistent_workers=a.workers > 0)
    rates = []
    for epoch in range(a.passes + 1):  # pass 0 warms the page cache and starts the workers
        if a.cold:
            os.sync()
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
        start = time.perf_counter()
        n = sum(images.shape[0] for images, _ in loader)
        s = time.perf_counter() - start
        if epoch > 0:
            rates.append(n / s)
        print(json.dumps({"kind": "image_pipeline", "impl": "torchvision", "pass": epoch, "workers": a.workers,
                          "images": n, "seconds": round(s, 3), "images_per_s": round(n / s, 2)}))
    m = statistics.median(rates)
    print(f"torchvision: median {m:.1f} images/s with {a.workers} workers ({m / max(a.workers, 1):.1f} per worker)")


if __name__ == "__main__":
    main()
