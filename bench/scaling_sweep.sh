#!/usr/bin/env bash
# The Horovod paper's chart for your machine or cluster: `ringtrain bench` at each rank count,
# every run's JSON line collected into a CSV, and a PNG (gnuplot) of images/s against ranks beside
# ideal scaling (the 1-rank figure times the ranks; the smallest run's per-rank figure when there
# is no 1-rank run), with the efficiency printed at each point and in a second panel.
#
# usage: bench/scaling_sweep.sh --config FILE --ranks "1 2 4 8" [--out DIR] [--bin RINGTRAIN]
#          [--mpirun "COMMAND"] [--hostfile FILE | --hosts "h1 h2 ..."] [--title TEXT]
#          [--set table.key=value ...]
#   --out       where sweep.jsonl, sweep.csv and sweep.png go (default runs/sweep)
#   --mpirun    the command that launches a run, ending in scripts/mpi_launch.sh and its
#               options (default: scripts/mpi_launch.sh --bind-to none; it speaks Open MPI's
#               mpirun and MPICH's Hydra, and $RINGTRAIN_MPIEXEC names the launcher, default
#               mpirun); -np, --hostfile and --hosts are added as mpi_launch.sh's options
#   --hostfile  for runs across hosts, in the launcher's own format
#   --hosts     spread each run over these hosts in ring order, host by host: P ranks take
#               ceil(P / hosts) slots on as many hosts as they fill (--hosts h1:k,h2:k), so the
#               ring crosses each host boundary once (round robin would cross it at every hop:
#               docs/results/2026-11-23-rank-placement.md)
#   --set       passed to every ringtrain bench run (e.g. --set dist.overlap=false)
set -euo pipefail
cd "$(dirname "$0")/.."

config="" ranks="" out=runs/sweep bin=./build/ringtrain launcher="scripts/mpi_launch.sh --bind-to none" hostfile=""
hosts=""
title="" sets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --mpirun) launcher=$2; shift 2 ;;
    --hostfile) hostfile=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --title) title=$2; shift 2 ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    *) echo "scaling_sweep: unknown argument '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
[ -n "$config" ] && [ -n "$ranks" ] || { echo "scaling_sweep: --config FILE and --ranks \"1 2 ...\" are required" >&2; exit 2; }
[ -x "$bin" ] || { echo "scaling_sweep: no ringtrain at $bin (build it, or pass --bin)" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "scaling_sweep: gnuplot is missing (Debian: gnuplot-nox, in scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$out"
: > "$out/sweep.jsonl"

for p in $ranks; do
  read -r -a run <<< "$launcher"
  [ "$p" -gt "$(nproc)" ] && [ -z "$hostfile$hosts" ] && run+=(--oversubscribe)
  [ -n "$hostfile" ] && run+=(--hostfile "$hostfile")
  if [ -n "$hosts" ]; then
    read -r -a host_list <<< "$hosts"
    per=$(( (p + ${#host_list[@]} - 1) / ${#host_list[@]} ))
    used=$(( (p + per - 1) / per ))
    spec=$(printf "%s:$per," "${host_list[@]:0:$used}")
    run+=(--hosts "${spec%,}")
  fi
  echo "scaling_sweep: $p rank(s)" >&2
  line=$("${run[@]}" -np "$p" "$bin" bench --config "$config" "${sets[@]}" | grep '^{"kind":"bench"' | tail -1)
  [ -n "$line" ] || { echo "scaling_sweep: the $p-rank run printed no JSON line" >&2; exit 1; }
  echo "$line" >> "$out/sweep.jsonl"
done

python3 - "$out" <<'PY'
import csv, json, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(f"{out}/sweep.jsonl")]
rows.sort(key=lambda r: r["ranks"])
base = rows[0]  # ideal scaling starts from the smallest run's per-rank rate
per_rank = base["images_per_s"] / base["ranks"]
keys = ["model", "ranks", "hosts", "threads_per_rank", "device", "precision", "batch_per_rank", "image_size",
        "allreduce", "collective", "bucket_mb", "first_bucket_mb", "overlap", "images_per_s", "ci95_low",
        "ci95_high", "median_images_per_s"]
with open(f"{out}/sweep.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(keys + ["ideal_images_per_s", "efficiency"])
    for r in rows:
        ideal = per_rank * r["ranks"]
        values = [round(r[k], 3) if isinstance(r.get(k), float) else r.get(k, "") for k in keys]
        w.writerow(values + [f"{ideal:.3f}", f"{r['images_per_s'] / ideal:.4f}"])
PY

model=$(python3 -c "import csv,sys; print(next(csv.DictReader(open(sys.argv[1])))['model'])" "$out/sweep.csv")
[ -n "$title" ] || title="$model: ringtrain bench, images/s against ranks"
gnuplot <<GP
set datafile separator ","
set terminal pngcairo size 900,900 font ",11"
set output "$out/sweep.png"
set multiplot layout 2,1 title "$title"
set key top left
set logscale x 2
set grid
set xlabel "ranks"
set ylabel "images/s"
set yrange [0:*]
plot "$out/sweep.csv" using 2:18 skip 1 with lines dashtype 2 title "ideal (smallest run x ranks)", \
     "" using 2:14:15:16 skip 1 with yerrorlines pointtype 7 title "measured (95% interval)", \
     "" using 2:14:(sprintf("%.0f%%", 100*\$19)) skip 1 with labels offset 0,1.2 notitle
set ylabel "scaling efficiency"
set yrange [0:110]
set format y "%.0f%%"
plot "$out/sweep.csv" using 2:(100*\$19):(sprintf("%.1f%%", 100*\$19)) skip 1 with labels offset 0,1 notitle, \
     "" using 2:(100*\$19) skip 1 with linespoints pointtype 7 title "measured / ideal"
unset multiplot
GP
column -s, -t < "$out/sweep.csv" | cut -c1-200
echo "scaling_sweep: wrote $out/sweep.csv and $out/sweep.png"
