#!/usr/bin/env python3
"""docs/outputs.md's table of metrics.jsonl fields against the code and a run.

1. Statically: the fields the run's writers name (app/run/*.cpp, and the key a gradient hook names
   its error under in dist/) are exactly the table's, so a field added, renamed or dropped in
   either place fails here.
2. Against a run's metrics.jsonl (given): every record's fields are in the table under its kind, and
   every field the table says a record carries "always" is there.

usage: metrics_fields_test.py SOURCE_DIR [METRICS_JSONL ...]
"""
import glob
import json
import os
import re
import sys

WRITERS = ["app/run/training_run.cpp", "app/run/epoch_report.cpp", "app/run/straggler_report.cpp",
           "app/run/run_target.cpp", "app/run/bucket_tuner.cpp", "app/run/elastic_record.cpp",
           "elastic/launch_record.cpp"]


def documented(root):
    """kind -> {field: when}, from the table whose header is | kind | field | written | meaning |."""
    table, out = False, {}
    for line in open(os.path.join(root, "docs/outputs.md"), encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[:3] == ["kind", "field", "written"]:
            table = True
            continue
        if table and not line.startswith("|"):
            break
        if table and not set(cells[0]) <= {"-"}:
            kind, field = cells[0].strip("`"), cells[1].strip("`")
            out.setdefault(kind, {})[field] = cells[2]
    return out


def written_in_code(root):
    fields = set()
    for rel in WRITERS:
        text = open(os.path.join(root, rel), encoding="utf-8").read()
        fields |= set(re.findall(r'\{"([a-z_0-9]+)",', text)) | set(re.findall(r'\["([a-z_0-9]+)"\] =', text))
    for path in glob.glob(os.path.join(root, "dist", "**", "*.h"), recursive=True):
        fields |= set(re.findall(r'error_key\(\) const override \{ return "([a-z_0-9]+)"', open(path).read()))
    return fields - {"kind"}


def main():
    root, runs = sys.argv[1], sys.argv[2:]
    docs = documented(root)
    problems = []
    if not docs:
        problems.append("docs/outputs.md: no table headed | kind | field | written | meaning |")
    in_docs = {f for fields in docs.values() for f in fields}
    in_code = written_in_code(root)
    for f in sorted(in_code - in_docs):
        problems.append(f"the run writes '{f}' (app/run/), docs/outputs.md does not list it")
    for f in sorted(in_docs - in_code):
        problems.append(f"docs/outputs.md lists '{f}', which no writer in app/run/ names")
    seen = set()
    for path in runs:
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            r = json.loads(line)
            kind = r.get("kind")
            seen.add(kind)
            if kind not in docs:
                problems.append(f"{path}:{n}: a record of kind '{kind}', which docs/outputs.md does not list")
                continue
            for f in sorted(set(r) - {"kind"} - set(docs[kind])):
                problems.append(f"{path}:{n}: '{kind}' record's '{f}' is not in docs/outputs.md under that kind")
            for f, when in docs[kind].items():
                if when == "always" and f not in r:
                    problems.append(f"{path}:{n}: '{kind}' record lacks '{f}', which docs/outputs.md says it always has")
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"metrics fields: {len(in_docs)} documented, all written by the code; records of {sorted(seen)} checked")


if __name__ == "__main__":
    main()
