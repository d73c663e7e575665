#!/usr/bin/env python3
"""Runs the tour as a newcomer meets it: every ```sh block of docs/tour/0*.md, chapter by chapter
and in order, each command as written, in a scratch copy of the repository (links to the source,
its own runs/, and ./build/ the build under test), and checks what the text quotes:

- each untagged ``` block after a ```sh block (up to the next one) is that block's output: every
  line of it must appear in what its commands printed, but lines that depend on the machine's
  speed or cores (times, images/s, thread counts; a block that opens with one is all timings)
  and, at the reduced size, the training's epoch and done lines;
- chapter 5's tables of simulated efficiencies: each row is simulated again, from the chapter's
  own command with the row's model and settings, and must print the percentages the row quotes.

Reduced size, the default: the environment's RINGTRAIN_SET (README: overrides after the command
line's) holds train.epochs=1, bench.warmup_steps=1, bench.windows=2, bench.steps_per_window=2 and
data.train_images (and the other three IDX files) naming the first 6,400 training and 1,000 test
images of Fashion-MNIST: the trainings are one short epoch, the benchmarks five steps, and the
quoted "60000 training / 10000 test" reads as the subset's counts. TOUR_FULL=1 runs everything at its size and
checks each quoted epoch's and run's losses and top-1 to the digits printed (on the machine the
text names; other CPUs round differently). Needs Fashion-MNIST (exit 77 without it).

usage: tour_commands_test.py SOURCE_DIR BINARY_DIR
"""
import os, re, shutil, subprocess, sys, tempfile, time

source, binary = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
full = os.environ.get("TOUR_FULL") == "1"
if not os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
    print("SKIP: Fashion-MNIST not installed in /usr/share/datasets/fashion-mnist")
    sys.exit(77)
tour = os.path.join(source, "docs/tour")
chapters = sorted(f for f in os.listdir(tour) if re.match(r"0\d-.*\.md$", f))
assert len(chapters) >= 6, f"expected chapters 01-06 in docs/tour, found {chapters}"

# Lines whose figures depend on the machine's speed or cores, never compared.
MACHINE = re.compile(r"img/s|images/s|\bms\b|\d s\)|threads|data wait|ETA|step_ms|\(\d+(\.\d+)? s\)")
TRAINING = re.compile(r"^(epoch \d+/\d+|done:)")


def blocks(path):
    """The chapter as [(kind, lines)]: kind 'sh' (commands, continuations joined, comments
    dropped), 'out' (an untagged block) or 'text' (a Markdown line outside blocks)."""
    out, kind, lines, pending = [], None, [], ""
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("```"):
            if kind is None:
                tag = line.strip()[3:]
                kind, lines = ("sh" if tag == "sh" else "out" if tag == "" else "other"), []
            else:
                if kind != "other":
                    out.append((kind, lines))
                kind = None
            continue
        if kind is None:
            out.append(("text", [line]))
        elif kind == "sh":
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            pending += line.rstrip("\\").strip() + " "
            if not line.endswith("\\"):
                lines.append(pending.strip())
                pending = ""
        else:
            lines.append(line)
    return out


def norm(s):
    return " ".join(s.split())


scratch = tempfile.mkdtemp(prefix="ringtrain_tour_")
for entry in os.listdir(source):
    if entry not in ("build", "runs", ".git"):
        os.symlink(os.path.join(source, entry), os.path.join(scratch, entry))
os.symlink(binary, os.path.join(scratch, "build"))
os.makedirs(os.path.join(scratch, "runs"))
env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
SUBSET = (6400, 1000)  # the reduced size's Fashion-MNIST: its first training and test images
if not full:
    subset = os.path.join(scratch, "fashion_subset")
    subprocess.run([sys.executable, os.path.join(source, "tests/support/idx_subset.py"),
                    "/usr/share/datasets/fashion-mnist", subset, *map(str, SUBSET)], check=True)
    files = {"train_images": "train-images-idx3-ubyte", "train_labels": "train-labels-idx1-ubyte",
             "test_images": "t10k-images-idx3-ubyte", "test_labels": "t10k-labels-idx1-ubyte"}
    env["RINGTRAIN_SET"] = " ".join(
        ["train.epochs=1", "bench.warmup_steps=1", "bench.windows=2", "bench.steps_per_window=2"] +
        [f"data.{key}={os.path.join(subset, name)}" for key, name in files.items()])


seconds = {}  # each command's, for the summary


def run(command):
    started = time.monotonic()
    r = subprocess.run(command, shell=True, cwd=scratch, env=env, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        sys.exit(f"FAILED ({r.returncode}): {command}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    seconds[command] = time.monotonic() - started
    return r.stdout + r.stderr


def check_quoted(chapter, quoted, printed, commands):
    said = norm(printed)
    checked = 0
    if quoted and MACHINE.search(quoted[0]):
        return 0  # a block of timings (the timeline's summary)
    for line in quoted:
        text = norm(line)
        if not full:  # the subset's counts for the whole set's
            text = text.replace("60000 training / 10000 test", "%d training / %d test" % SUBSET)
        if not text or text.startswith("...") or text.startswith("$ ") or MACHINE.search(text):
            if full and TRAINING.match(text):
                pass  # the figures of an epoch or run line, its times left out
            else:
                continue
        if TRAINING.match(text):
            if not full:
                continue
            for figure in re.findall(r"(?:train|test) loss \S+ top-1 [\d.]+%|top-5 [\d.]+%|test top-1 [\d.]+%", text):
                if norm(figure) not in said:
                    sys.exit(f"{chapter}: '{figure}' (from: {line}) not in the output of {commands}\n{printed[-3000:]}")
            checked += 1
            continue
        if text not in said:
            sys.exit(f"{chapter}: the quoted line\n  {line}\nis not in the output of {commands}\n{printed[-4000:]}")
        checked += 1
    return checked


MODELS = {"Inception V3": "configs/inception_v3.toml", "ResNet-101": "configs/resnet101.toml",
          "VGG-16": "configs/vgg16.toml"}


def efficiencies(command):
    """simulate's efficiency column, as the text writes it: 85.8%."""
    rows = [l.split() for l in run(command).splitlines() if re.match(r"\s+\d+\s", l)]
    return ["%.1f%%" % (100 * float(r[8])) for r in rows]


def check_tables(chapter, parts, commands):
    """Chapter 5's efficiency tables, each row simulated again from the chapter's own command."""
    rows = checked = 0
    base = {"fit": next((c for c in commands if "--cycle-ms" in c), None),
            "defaults": next((c for c in commands if "simulate" in c and "resnet101" in c and "--set" not in c), None)}
    header = None
    for kind, lines in parts:
        if kind != "text":
            header = None
            continue
        line = lines[0]
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(line) <= set("|-: "):
            continue
        model = next((m for m in MODELS if cells[0].startswith(m)), None)
        if header[:2] == ["model", "GPUs"] and model and base["fit"]:
            command, want = base["fit"], cells[3].split(" / ")
        elif header[0] == "model, settings" and model and base["defaults"]:
            settings = "".join(f" --set {k}={v}" for k, v in re.findall(r'`(\w+\.\w+) = "?([\w.]+)"?`', cells[0]))
            command, want = base["defaults"] + settings, cells[1:4]
        else:
            continue
        command = re.sub(r"configs/\w+\.toml", MODELS[model], command, count=1)
        got = efficiencies(command.replace("./build/", binary + "/"))
        if got != want:
            sys.exit(f"{chapter}: the row '{line}' quotes {want}; {command} prints {got}")
        rows += 1
    return rows


ran = quoted = tables = 0
for chapter in chapters:
    parts = blocks(os.path.join(tour, chapter))
    commands = [c for kind, lines in parts if kind == "sh" for c in lines]
    i = 0
    while i < len(parts):
        kind, lines = parts[i]
        i += 1
        if kind != "sh":
            continue
        printed = ""
        for command in lines:
            print(f"{chapter}: {command}", flush=True)
            printed += run(command)
            ran += 1
        while i < len(parts) and parts[i][0] != "sh":
            if parts[i][0] == "out":
                quoted += check_quoted(chapter, parts[i][1], printed, lines)
            i += 1
    if chapter.startswith("05"):
        tables += check_tables(chapter, parts, commands)
shutil.rmtree(scratch, ignore_errors=True)
for command, s in sorted(seconds.items(), key=lambda x: -x[1])[:5]:
    print(f"{s:6.1f} s  {command}")
print(f"ran {ran} commands of {len(chapters)} chapters{' at full size' if full else ''}; "
      f"{quoted} quoted lines and {tables} table rows agree with what they print")
assert ran >= 25 and quoted >= 40 and tables >= 8, (ran, quoted, tables)
