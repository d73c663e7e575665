#!/usr/bin/env python3
"""The folders are layers and their arrows run one way: a source file includes the project's
headers only from its own folder and the folders below it, as LAYERS says. CMake's libraries link
the same way; this catches a header included against the grain, which links fine and still ties
a lower layer to a higher one.

usage: layers_test.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

# Each folder and the folders its sources may include from (besides its own).
LAYERS = {
    "base": [],
    "formats": ["base"],
    "nn": ["base"],
    "data": ["base"],
    "models": ["base", "nn"],
    "dist": ["base", "nn"],
    "config": ["base"],
    "app": ["base", "formats", "nn", "data", "models", "dist", "config"],
    "tools": ["base", "formats", "nn", "data", "models", "dist", "config", "app"],
    "elastic": ["base", "formats", "app"],
    "cli": ["base", "formats", "nn", "data", "models", "dist", "config", "app", "tools", "elastic"],
    "bench": ["base", "formats", "nn", "data", "models", "dist"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
# Top-level folders with sources that are not layers: the tests, which may include anything.
NOT_LAYERS = {"tests"}


def main():
    root = sys.argv[1]
    out = subprocess.run(["git", "-C", root, "ls-files", "*.cpp", "*.h", "*.cu", "*.cuh"], capture_output=True,
                         check=True, text=True).stdout.split()
    problems = []
    for rel in out:
        folder = rel.split("/")[0]
        if "/" not in rel or folder in NOT_LAYERS or not os.path.isfile(os.path.join(root, rel)):
            continue  # tests, and files being removed
        if folder not in LAYERS:  # a new folder must be placed among the layers, not skipped
            problems.append(f"{rel}: its folder {folder}/ is not in LAYERS (tests/style/layers_test.py): say "
                            "which folders it may include from")
            continue
        allowed = set(LAYERS[folder]) | {folder}
        for n, line in enumerate(open(os.path.join(root, rel), encoding="utf-8"), 1):
            m = INCLUDE.match(line)
            if m and m.group(1) in LAYERS and m.group(1) not in allowed:
                problems.append(f"{rel}:{n}: {folder}/ includes {m.group(1)}/, a layer above it: {line.strip()}")
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"layers: {len(out)} sources include only from their own folder and the folders below it")


if __name__ == "__main__":
    main()
