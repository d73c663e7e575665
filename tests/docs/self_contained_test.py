#!/usr/bin/env python3
"""The repository stands alone: no file names a path outside it (the developers' shared folder
beside the repository, which users never have), and every relative link in the Markdown documents
resolves to a file of the repository.

usage: self_contained_test.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

# Spelled in pieces, so that this file does not name the folder it looks for.
SHARED = "sha" + "red"
OUTSIDE = re.compile(r"\.\./" + SHARED + "|" + SHARED + r"/(anchors|notes|hooks)/|" + SHARED + r"/(REFERENCE|GUIDE)\.md")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def repository_files(root):
    """The tracked files where git knows them, else every file outside build trees."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True).stdout
        return [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x != ".git" and not x.startswith("build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def main():
    root = sys.argv[1]
    problems = []
    for rel in repository_files(root):
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue  # binary
        for n, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                problems.append(f"{rel}:{n}: points outside the repository: {line.strip()}")
            if rel.endswith(".md"):
                for target in LINK.findall(line):
                    if re.match(r"[a-z]+:", target) or target.startswith("#"):
                        continue  # a URL, or an anchor in the same file
                    file_part = target.split("#")[0]
                    resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                    if not os.path.exists(resolved):
                        problems.append(f"{rel}:{n}: link to {target}, which does not exist")
                    elif not os.path.abspath(resolved).startswith(os.path.abspath(root) + os.sep):
                        problems.append(f"{rel}:{n}: link to {target}, outside the repository")
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print("self-contained: no path outside the repository, every Markdown link resolves")


if __name__ == "__main__":
    main()
