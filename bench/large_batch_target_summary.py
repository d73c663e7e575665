#!/usr/bin/env python3
"""Epochs to the target from bench/large_batch_target.sh's epochs.csv, as Markdown.

usage: large_batch_target_summary.py EPOCHS_CSV LONGEST [--plot GNUPLOT_FILE]

The target of a schedule (its number of epochs) is the mean over seeds of the baseline's final
test top-1, minus 0.5 point. A run's figure is the first epoch whose evaluation reaches it; the
table gives each arm, batch, schedule and rate's median over the seeds ("-" where the median run
never reached it), the range, and how many seeds reached it. The best rate of an arm is the one
with the fewest median epochs at the first large batch on the LONGEST schedule; "best rates: sgd
R, lars R" says which. --plot writes a gnuplot script drawing seed 1's curves of the baseline and
each arm's best rate, one panel per schedule, into out/curves.png (gnuplot -e "out='DIR'").
"""
import collections
import csv
import math
import statistics
import sys


def main(path, longest, plot_path=None):
    curves = collections.defaultdict(dict)  # (arm, batch, epochs, seed, rate) -> {epoch: top1}
    for r in csv.DictReader(open(path)):
        key = (r["arm"], int(r["batch"]), int(r["epochs"]), int(r["seed"]), r["rate"])
        curves[key][int(r["epoch"])] = float(r["test_top1"])
    # Only finished runs count: their last evaluation is their schedule's last epoch.
    curves = {k: v for k, v in curves.items() if k[2] in v}
    targets = {}
    for epochs in sorted({k[2] for k in curves}):
        finals = [v[epochs] for k, v in curves.items() if k[0] == "baseline" and k[2] == epochs and not math.isnan(v[epochs])]
        if finals:
            targets[epochs] = (statistics.mean(finals) - 0.5, finals)
    print("# Epochs to the target\n")
    print("| schedule (epochs) | baseline final top-1 per seed (%) | target (%) |")
    print("|---|---|---|")
    for epochs, (target, finals) in targets.items():
        print(f"| {epochs} | {', '.join(f'{f:.2f}' for f in finals)} | {target:.2f} |")
    groups = collections.defaultdict(dict)  # (arm, batch, epochs, rate) -> {seed: epoch or inf}
    for (arm, batch, epochs, seed, rate), v in curves.items():
        if epochs not in targets:
            continue
        target = targets[epochs][0]
        # A diverged run never counts: its evaluations after the loss went to NaN are not
        # measurements (binaries before the fix scored NaN logits as right).
        hit = math.inf if math.isnan(v[epochs]) else next((e for e in sorted(v) if v[e] >= target), math.inf)
        groups[(arm, batch, epochs, rate)][seed] = hit
    print("\n| arm | global batch | schedule | rate | epochs to target: median | range | seeds reaching it | final top-1 (median, %) |")
    print("|---|---|---|---|---|---|---|---|")
    show = lambda x: "-" if x == math.inf else str(int(x)) if x == int(x) else f"{x:.1f}"
    medians = {}
    for key in sorted(groups, key=lambda k: (k[0] != "baseline", k[0], k[1], k[2], float(k[3]))):
        arm, batch, epochs, rate = key
        hits = list(groups[key].values())
        med = statistics.median(hits)
        medians[key] = (med, sum(h != math.inf for h in hits))
        finals = [f for f in (curves[(arm, batch, epochs, s, rate)][epochs] for s in groups[key]) if not math.isnan(f)]
        final_words = f"{statistics.median(finals):.2f}" if finals else "diverged"
        if finals and len(finals) < len(hits):
            final_words += f" ({len(hits) - len(finals)} diverged)"
        rate_words = "-" if arm == "baseline" else (f"{rate} per 256" if arm == "sgd" else rate)
        spread = "-" if min(hits) == math.inf else f"{show(min(hits))}-{show(max(hits))}"
        print(f"| {arm} | {batch} | {epochs} | {rate_words} | {show(med)} | {spread} "
              f"| {medians[key][1]} of {len(hits)} | {final_words} |")
    large = sorted({k[1] for k in groups if k[0] != "baseline"})
    best = {}
    for arm in ("sgd", "lars"):
        at = [(medians[k][0], -medians[k][1], float(k[3]), k[3]) for k in medians
              if k[0] == arm and large and k[1] == large[0] and k[2] == longest]
        if at:
            best[arm] = min(at)[3]
    print(f"\nbest rates: sgd {best.get('sgd', '')}, lars {best.get('lars', '')}")
    for arm in ("sgd", "lars"):
        reached = [k[1] for k in medians if k[0] == arm and k[2] == longest and k[3] == best.get(arm)
                   and medians[k][0] != math.inf]
        print(f"largest batch where {arm} at its best rate reaches the target in {longest} epochs (median): "
              f"{max(reached) if reached else 'none'}")
    if plot_path:
        write_plot(plot_path, path, curves, targets, best, large)


def write_plot(plot_path, csv_path, curves, targets, best, large):
    lines = ['set datafile separator ","', 'set terminal pngcairo size 1400,480 font ",10"',
             "set output out.'/curves.png'", f"set multiplot layout 1,{max(len(targets), 1)}",
             'set xlabel "epoch"', 'set ylabel "test top-1 (%)"', "set yrange [40:95]", "set grid",
             "set key bottom right"]
    for epochs, (target, _) in targets.items():
        lines.append(f'set title "{epochs} epochs, target {target:.2f}%"')
        plots = [f"{target} with lines dashtype 2 title \"target\""]
        wanted = [("baseline", 64, "0.4", "64 a step, SGD")]
        for arm in ("sgd", "lars"):
            if arm in best and large:
                wanted.append((arm, large[0], best[arm], f"{large[0]} a step, {arm.upper()} {best[arm]}"))
        for arm, batch, rate, title in wanted:
            name = f"{arm}_b{batch}_e{epochs}_s1_r{rate}"
            plots.append(f"\"< grep ^{name}, {csv_path}\" using 7:8 with linespoints title \"{title}\"")
        lines.append("plot " + ", ".join(plots))
    lines.append("unset multiplot")
    open(plot_path, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    plot = None
    if "--plot" in args:
        i = args.index("--plot")
        plot = args[i + 1]
        del args[i:i + 2]
    main(args[0], int(args[1]), plot)
