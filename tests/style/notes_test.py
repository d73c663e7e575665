#!/usr/bin/env python3
"""Every Note has one heading, and every pointer to a Note finds it.

A Note is a comment that explains one idea at length, named in brackets. Its heading is the one
comment that starts with its name, "// Note [Name]" (or "# Note [Name]"), alone on its line or
followed by a colon; everywhere else it is referred to, "Note [Name]", and where the reference says
"Note [Name] in FILE", FILE (from the repository's root, or from the referring file's folder) is the
file that holds the heading. A name may wrap across comment lines.

usage: notes_test.py SOURCE_DIR
"""
import collections
import os
import re
import subprocess
import sys

SOURCES = re.compile(r"(\.(h|cpp|cu|cuh|py|sh|cmake|toml|md)|CMakeLists\.txt)$")
# A comment's continuation between two lines: the line break and the next line's comment marker.
CONTINUED = re.compile(r"\n[ \t]*(?://|#)?[ \t]*")
HEADING = re.compile(r"^[ \t]*(?://|#)[ \t]*Note \[([^\]]+)\](?=:|[ \t]*\n)", re.MULTILINE)
REFERENCE = re.compile(r"Note \[([^\]]+)\](?:\s+in\s+\[?`?([A-Za-z0-9_./-]+\.[a-z]+))?")


def name_of(raw):
    """A name as written, its line breaks and comment markers taken out."""
    return " ".join(CONTINUED.sub(" ", raw).split())


def main(root):
    listed = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True)
    files = [f for f in listed.stdout.split()
             if SOURCES.search(f) and not f.startswith("docs/results/") and f != "tests/style/notes_test.py"]
    texts = {f: open(os.path.join(root, f), encoding="utf-8", errors="replace").read() for f in files}
    headings = collections.defaultdict(list)
    for f, text in texts.items():
        if f.endswith(".md"):
            continue  # the user's documents refer to Notes; the code holds them
        for m in HEADING.finditer(text):
            headings[name_of(m.group(1))].append(f"{f}:{text.count(chr(10), 0, m.start()) + 1}")
    problems = []
    for name, sites in sorted(headings.items()):
        if len(sites) > 1:
            problems.append(f"Note [{name}] has {len(sites)} headings, one wanted: {', '.join(sites)} "
                            f"(elsewhere write \"Note [{name}] in FILE: ...\")")
    references = 0
    for f, text in texts.items():
        for m in REFERENCE.finditer(text):
            name = name_of(m.group(1))
            line = text.count("\n", 0, m.start()) + 1
            if name not in headings:
                problems.append(f"{f}:{line}: Note [{name}] has no heading anywhere")
                continue
            references += 1
            target = m.group(2)
            if not target:
                continue
            heading_files = {site.rsplit(":", 1)[0] for site in headings[name]}
            candidates = {os.path.normpath(target), os.path.normpath(os.path.join(os.path.dirname(f), target))}
            if not candidates & heading_files:
                problems.append(f"{f}:{line}: Note [{name}] in {target}: its heading is in "
                                f"{', '.join(sorted(heading_files))}")
    for p in problems:
        print(p)
    print(f"notes_test: {len(headings)} Notes, {references} references, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
