#!/usr/bin/env bash
# What losing a host costs under `ringtrain elastic`, and whether the run still reaches its
# accuracy: LeNet on the whole of Fashion-MNIST at train.global_batch = 64 (938 steps an epoch),
# 2 namespace hosts x 2 ranks (scripts/netns_hosts.sh), saving every 100 steps, for each seed:
#   whole: no failure;
#   kill:  every process of host b killed at step 550 and whatever starts there after it (host b
#          lost for good): the job goes on at 2 ranks x 2 micro-batches on host a;
#   cut:   host a's end of the link down for good at step 550 (50 steps after a save).
# Prints, per run: the final test top-1, the seconds from the failure to the first step after the
# launch that followed it, and the steps lost (logged before the failure, less the step resumed
# from); then a table of the three seeds. Needs root (namespaces), ~4 minutes on 2 cores.
# usage: bench/elastic_recovery.sh OUT_DIR [SEEDS (default "1 2 3")] [EPOCHS (default 3)]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$1 seeds=${2:-1 2 3} epochs=${3:-3}
ringtrain=$src/build/ringtrain hosts=$src/scripts/netns_hosts.sh
source "$src/tests/support/fashion_mnist.sh"
source "$src/tests/support/netns_link.sh"
require_fashion_mnist
mkdir -p "$out"
out=$(cd "$out" && pwd)
killer=
trap '[[ -n $killer ]] && kill "$killer" 2> /dev/null; "$hosts" down' EXIT

# run NAME SEED MODE: one supervised run; appends its figures to $out/figures.jsonl.
run() {
  local name=$1 seed=$2 mode=$3 dir=$out/$1 t_fail=0 step=0 first=0
  rm -rf "$dir"
  "$hosts" up > /dev/null
  printf 'rt-a 2\nrt-b 2\n' > "$out/listed"
  "$hosts" on rt-a "$ringtrain" elastic --discover "cat $out/listed" --min-np 2 --max-np 4 \
    --launcher "$src/scripts/mpi_launch.sh --testing --rsh $("$hosts" agent) --net 10.213.0.0/24" \
    -- "$ringtrain" train --config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.threads=1 \
    --set train.global_batch=64 --set train.batch_per_rank=16 --set train.epochs="$epochs" --set train.seed="$seed" \
    --set checkpoint.every_steps=100 --set log.progress=none --set log.every_steps=1 --set dist.stall_abort_s=15 \
    --set checkpoint.dir="$dir" > "$dir.out" 2>&1 &
  local job=$!
  if [[ $mode != whole ]]; then
    until grep -qs '"step":550,' "$dir/metrics.jsonl"; do sleep 0.02; done
    t_fail=$(date +%s.%N)
    if [[ $mode == kill ]]; then
      lose_host rt-b
    else
      ip -n rt-a link set rt-veth-a down
    fi
    step=$(last_step "$dir/metrics.jsonl")
    until relaunch_resumed_from "$dir/metrics.jsonl" > /dev/null; do sleep 0.05; done  # its first step
    first=$(date +%s.%N)
  fi
  wait "$job"
  [[ -n $killer ]] && { kill "$killer"; killer=; }
  "$hosts" down
  python3 - "$dir/metrics.jsonl" "$name" "$seed" "$mode" "$t_fail" "$first" "$step" >> "$out/figures.jsonl" << 'EOF'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
name, seed, mode, t_fail, first, step = sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
launches = [x for x in r if x["kind"] == "elastic"]
rec = {"run": name, "seed": seed, "mode": mode, "top1": [x for x in r if x["kind"] == "epoch"][-1]["test_top1"],
       "ranks": [x["ranks"] for x in launches]}
if mode != "whole":
    rec["seconds_to_first_step"] = round(first - t_fail, 1)
    rec["steps_lost"] = step - launches[1]["step"]
print(json.dumps(rec))
EOF
  tail -1 "$out/figures.jsonl"
}

rm -f "$out/figures.jsonl"
for seed in $seeds; do
  for mode in whole kill cut; do run "$mode-$seed" "$seed" "$mode"; done
done
python3 - "$out/figures.jsonl" << 'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| run | " + " | ".join(f"seed {s}" for s in sorted({r['seed'] for r in rows})) + " | mean | s to first step | steps lost |")
print("|---|" + "---|" * (len({r['seed'] for r in rows}) + 3))
for mode in ("whole", "kill", "cut"):
    rs = sorted((r for r in rows if r["mode"] == mode), key=lambda r: r["seed"])
    tops = [100 * r["top1"] for r in rs]
    extra = ("n/a", "n/a") if mode == "whole" else (
        ", ".join(str(r["seconds_to_first_step"]) for r in rs), ", ".join(str(r["steps_lost"]) for r in rs))
    print(f"| {mode} | " + " | ".join(f"{t:.2f}" for t in tops) + f" | {statistics.mean(tops):.2f} | {extra[0]} | {extra[1]} |")
EOF
