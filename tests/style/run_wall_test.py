#!/usr/bin/env python3
"""The wall between the engine and the run (Note [The run and the engine] in
app/run/training_run.h): the run's files live in app/run/, and no engine file (the rest of app/)
includes one; the engine stays small enough to read: app/trainer.cpp at most MAX_TRAINER_LINES
lines, the Trainer class at most MAX_METHODS methods (constructors and the destructor aside) and
MAX_MEMBERS data members.

usage: run_wall_test.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

MAX_TRAINER_LINES = 120
MAX_METHODS = 35
MAX_MEMBERS = 20
RUN_INCLUDE = re.compile(r'^\s*#\s*include\s+"app/run/')


def class_body(text, name):
    """The lines of `class name { ... };` at brace depth 1, comments and strings dropped."""
    start = re.search(r"^class %s\b[^;{]*\{" % name, text, re.M)
    if not start:
        return None
    depth, body, line = 1, [], ""
    for ch in text[start.end():]:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
        if ch == "\n":
            body.append(line)
            line = ""
        elif depth == 1 or ch in "{}":
            line += ch
    return [re.sub(r"//.*", "", l).strip() for l in body]


def declarations(lines):
    """Depth-1 declarations, each joined onto one line up to its ';' (or a body's '{}')."""
    out, cur = [], ""
    for l in lines:
        if not l or l.endswith(":") and not l.endswith("::"):  # public:, private:
            continue
        cur = (cur + " " + l).strip()
        if cur.endswith(";") or cur.endswith("}"):
            out.append(cur)
            cur = ""
    return out


def count(decls, name):
    methods, members = [], []
    for d in decls:
        if re.match(r"(struct|class|enum|using|friend)\b", d):
            continue
        if "(" in d.split("=")[0].split("{")[0]:
            if not re.match(r"(explicit\s+)?~?%s\s*\(" % name, d):
                methods.append(d)
        else:
            head = re.sub(r"\{[^}]*\}|=[^,;]*", "", d).rstrip(";")
            members += [n for n in re.findall(r"([A-Za-z_]\w*_)\s*(?:,|$)", head)]
    return methods, members


def main():
    root = sys.argv[1]
    files = subprocess.run(["git", "-C", root, "ls-files", "app/*.cpp", "app/*.h"], capture_output=True, check=True,
                           text=True).stdout.split()
    problems = []
    run_files = [f for f in files if f.startswith("app/run/")]
    if not run_files:
        problems.append("app/run/ holds no file: the run's files belong there")
    for rel in files:
        if rel.startswith("app/run/") or not os.path.isfile(os.path.join(root, rel)):
            continue
        for n, line in enumerate(open(os.path.join(root, rel), encoding="utf-8"), 1):
            if RUN_INCLUDE.match(line):
                problems.append(f"{rel}:{n}: an engine file includes a run file: {line.strip()}")
    lines = sum(1 for _ in open(os.path.join(root, "app/trainer.cpp"), encoding="utf-8"))
    if lines > MAX_TRAINER_LINES:
        problems.append(f"app/trainer.cpp: {lines} lines, over {MAX_TRAINER_LINES}")
    body = class_body(open(os.path.join(root, "app/trainer.h"), encoding="utf-8").read(), "Trainer")
    if body is None:
        problems.append("app/trainer.h: no class Trainer")
    else:
        methods, members = count(declarations(body), "Trainer")
        if len(methods) > MAX_METHODS:
            problems.append(f"app/trainer.h: class Trainer has {len(methods)} methods, over {MAX_METHODS}")
        if len(members) > MAX_MEMBERS:
            problems.append(f"app/trainer.h: class Trainer has {len(members)} data members, over {MAX_MEMBERS}: "
                            + ", ".join(members))
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"run wall: {len(run_files)} run files in app/run/, none included by the engine; app/trainer.cpp "
          f"{lines} lines; Trainer {len(methods)} methods, {len(members)} data members")


if __name__ == "__main__":
    main()
