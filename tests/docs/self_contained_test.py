#!/usr/bin/env python3
"""The repository stands alone: no file names a path outside it (the developers' shared folder
beside the repository, which users never have), every relative link in the Markdown documents
resolves to a file of the repository, and no file sends its reader where they cannot follow: to a
tracker's numbered or titled issues, or to the developers' own reference and guide files.

usage: self_contained_test.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

# Spelled in pieces, so that this file does not name the folder or the references it looks for.
SHARED = "sha" + "red"
ISSUE = "iss" + "ue"
DEV_FILES = "(REFER" + "ENCE|GUI" + "DE)"
OUTSIDE = re.compile(
    r"\.\./" + SHARED + "|" + SHARED + r"/(anchors|notes|hooks)/|" + SHARED + "/" + DEV_FILES + r"\.md")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# What a reader of the repository cannot follow, each with what the test says of it. A GitHub
# reference of the form owner/repo#N, or a URL, names where to look and passes.
UNFOLLOWABLE = [
    (re.compile(r"(?i:\b" + ISSUE + r")\s*(#|no\.\s*)?\d+\b"), "cites a tracker's issue by number"),
    (re.compile(r"(?i:\b" + ISSUE + r"):\s+[A-Z]"), "cites a tracker's issue by title"),
    (re.compile(r"(?i:\b(per|in|by) the " + ISSUE + r"\b|\b(the|this) " + ISSUE + r"('s\b|\s+(asks|says|wants)\b))"),
     "cites an issue the reader has not got"),
    (re.compile(r"\b" + DEV_FILES + r"\.md\b"), "names a developers' file users never have"),
    (re.compile(r"\b[Tt]he\s+GUI" + r"DE\b"), "names a developers' file users never have"),
]
URL = re.compile(r"[a-z]+://\S+")
# What starts a continuation line of a comment or a quote, dropped before joining two lines.
LEADER = re.compile(r"^\s*(//+|#+|\*|--|;+|>)?\s*")


def unfollowable(lines):
    """(line number, what) for each reference a reader cannot follow, also where one is wrapped
    across two lines."""
    found = []
    for i, line in enumerate(lines):
        line = URL.sub("", line)
        for pattern, what in UNFOLLOWABLE:
            if pattern.search(line):
                found.append((i + 1, what))
        if i + 1 < len(lines):
            joined = line + " " + LEADER.sub("", URL.sub("", lines[i + 1]), count=1)
            for pattern, what in UNFOLLOWABLE:
                if any(m.start() < len(line) < m.end() for m in pattern.finditer(joined)):
                    found.append((i + 1, what))
    return list(dict.fromkeys(found))  # each line's kind of problem once


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
        lines = text.splitlines()
        for n, what in unfollowable(lines):
            problems.append(f"{rel}:{n}: {what}: {lines[n - 1].strip()}")
        for n, line in enumerate(lines, 1):
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
    print("self-contained: no path outside the repository, every Markdown link resolves, no reference"
          " a reader cannot follow")


if __name__ == "__main__":
    main()
