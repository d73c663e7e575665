#!/usr/bin/env python3
"""Epochs to the target from bench/large_batch_target.sh's epochs.csv, as Markdown.

usage: large_batch_target_summary.py EPOCHS_CSV SWEEP_EPOCHS [--plot GNUPLOT_FILE]
       large_batch_target_summary.py EPOCHS_CSV --best ARM BATCH EPOCHS

The target of a schedule (its number of epochs) is the mean over seeds of the baseline's final
test top-1, minus 0.5 point. A run's figure is the first epoch whose evaluation reaches it; the
table gives each arm, batch, schedule and rate's median over the seeds ("-" where the median run
never reached it), the range, and how many seeds reached it. An arm's best rate at a batch and
schedule is seed 1's, the one the campaign ran the other seeds at: the fewest epochs, then the
highest final top-1; its figure is the median over all seeds. The last lines give, for the
SWEEP_EPOCHS schedule, the largest batch at which each arm's best rate reaches the target (the
median seed). --best prints that rate of ARM at BATCH and EPOCHS alone (the campaign's grid
search). --plot writes a gnuplot script drawing seed 1's curves of the baseline and each arm's
best rate at the large batch every schedule ran, one panel per schedule, into out/curves.png
(gnuplot -e "out='DIR'").
"""
import collections
import csv
import math
import statistics
import sys


def read_curves(path):
    curves = collections.defaultdict(dict)  # (arm, batch, epochs, seed, rate) -> {epoch: top1}
    for r in csv.DictReader(open(path)):
        key = (r["arm"], int(r["batch"]), int(r["epochs"]), int(r["seed"]), r["rate"])
        curves[key][int(r["epoch"])] = float(r["test_top1"])
    # Only finished runs count: their last evaluation is their schedule's last epoch.
    return {k: v for k, v in curves.items() if k[2] in v}


def read_targets(curves):
    targets = {}
    for epochs in sorted({k[2] for k in curves}):
        finals = [v[epochs] for k, v in curves.items() if k[0] == "baseline" and k[2] == epochs and not math.isnan(v[epochs])]
        if finals:
            targets[epochs] = (statistics.mean(finals) - 0.5, finals)
    return targets


def epochs_to_target(curve, epochs, target):
    # A diverged run never counts: its evaluations after the loss went to NaN are not measurements.
    if math.isnan(curve[epochs]):
        return math.inf
    return next((e for e in sorted(curve) if curve[e] >= target), math.inf)


def group(curves, targets, seeds=None):
    """(arm, batch, epochs, rate) -> (median epochs, seeds reaching, median final, hits, finals)."""
    runs = collections.defaultdict(list)
    for (arm, batch, epochs, seed, rate), v in curves.items():
        if epochs in targets and (seeds is None or seed in seeds):
            runs[(arm, batch, epochs, rate)].append((epochs_to_target(v, epochs, targets[epochs][0]), v[epochs]))
    out = {}
    for key, rs in runs.items():
        hits = [h for h, _ in rs]
        finals = [f for _, f in rs if not math.isnan(f)]
        out[key] = (statistics.median(hits), sum(h != math.inf for h in hits),
                    statistics.median(finals) if finals else -math.inf, hits, finals)
    return out


def best_rates(groups, arm, batch, epochs):
    at = [(g[0], -g[1], -g[2], float(k[3]), k[3]) for k, g in groups.items() if k[:3] == (arm, batch, epochs)]
    return min(at)[4] if at else None


def main(path, sweep_epochs, plot_path=None):
    curves = read_curves(path)
    targets = read_targets(curves)
    print("# Epochs to the target\n")
    print("| schedule (epochs) | baseline final top-1 per seed (%) | target (%) |")
    print("|---|---|---|")
    for epochs, (target, finals) in targets.items():
        print(f"| {epochs} | {', '.join(f'{f:.2f}' for f in finals)} | {target:.2f} |")
    groups = group(curves, targets)
    print("\n| arm | global batch | schedule | rate | epochs to target: median | range | seeds reaching it | final top-1 (median, %) |")
    print("|---|---|---|---|---|---|---|---|")
    show = lambda x: "-" if x == math.inf else str(int(x)) if x == int(x) else f"{x:.1f}"
    for key in sorted(groups, key=lambda k: (k[0] != "baseline", k[0], k[1], k[2], float(k[3]))):
        arm, batch, epochs, rate = key
        med, reaching, _, hits, finals = groups[key]
        final_words = f"{statistics.median(finals):.2f}" if finals else "diverged"
        if finals and len(finals) < len(hits):
            final_words += f" ({len(hits) - len(finals)} diverged)"
        rate_words = "-" if arm == "baseline" else (f"{rate} per 256" if arm == "sgd" else rate)
        spread = "-" if min(hits) == math.inf else f"{show(min(hits))}-{show(max(hits))}".replace("--", "-never")
        print(f"| {arm} | {batch} | {epochs} | {rate_words} | {show(med)} | {spread} "
              f"| {reaching} of {len(hits)} | {final_words} |")
    large = sorted({k[1] for k in groups if k[0] != "baseline"})
    print()
    best = {}
    # A rate only seed 1 ran must not win on one lucky run against another's median of three.
    seed1 = group(curves, targets, seeds={1})
    for epochs in targets:
        for arm in ("sgd", "lars"):
            for batch in large:
                rate = best_rates(seed1, arm, batch, epochs)
                if rate is not None:
                    best[(arm, batch, epochs)] = rate
                    med = groups[(arm, batch, epochs, rate)][0]
                    print(f"best rate: {arm} at {batch} in {epochs} epochs: {rate} ({show(med)} epochs to target)")
    for arm in ("sgd", "lars"):
        reached = [b for (a, b, e), rate in best.items() if a == arm and e == sweep_epochs
                   and groups[(a, b, e, rate)][0] != math.inf]
        print(f"largest batch where {arm} at its best rate reaches the target in {sweep_epochs} epochs (median): "
              f"{max(reached) if reached else 'none'}")
    if plot_path:
        # The campaign's own batch is the one every schedule ran; the sweep's ran one schedule.
        runs_in = lambda b: len({e for (_, bb, e) in best if bb == b})
        write_plot(plot_path, path, targets, best, max(large, key=lambda b: (runs_in(b), -b)) if large else None)


def write_plot(plot_path, csv_path, targets, best, batch):
    lines = ['set datafile separator ","', 'set terminal pngcairo size 1400,480 font ",10"',
             "set output out.'/curves.png'", f"set multiplot layout 1,{max(len(targets), 1)}",
             'set xlabel "epoch"', 'set ylabel "test top-1 (%)"', "set yrange [60:95]", "set grid",
             "set key bottom right"]
    for epochs, (target, _) in targets.items():
        lines.append(f'set title "{epochs} epochs, target {target:.2f}%"')
        plots = [f"{target} with lines dashtype 2 title \"target\""]
        wanted = [("baseline", 64, "0.4", "64 a step, SGD")]
        for arm in ("sgd", "lars"):
            rate = best.get((arm, batch, epochs))
            if rate is not None:
                wanted.append((arm, batch, rate, f"{batch} a step, {arm.upper()} {rate}"))
        for arm, batch, rate, title in wanted:
            name = f"{arm}_b{batch}_e{epochs}_s1_r{rate}"
            plots.append(f"\"< grep ^{name}, {csv_path}\" using 7:8 with linespoints title \"{title}\"")
        lines.append("plot " + ", ".join(plots))
    lines.append("unset multiplot")
    open(plot_path, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--best" in args:
        i = args.index("--best")
        arm, batch, epochs = args[i + 1], int(args[i + 2]), int(args[i + 3])
        curves = read_curves(args[0])
        rate = best_rates(group(curves, read_targets(curves), seeds={1}), arm, batch, epochs)
        print(rate or "")
        sys.exit(0)
    plot = None
    if "--plot" in args:
        i = args.index("--plot")
        plot = args[i + 1]
        del args[i:i + 2]
    main(args[0], int(args[1]), plot)
