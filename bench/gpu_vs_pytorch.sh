#!/usr/bin/env bash
# On a machine with a GPU: build ringtrain with CUDA (unless given binaries), run the GPU suites
# (op parity, and the trainer end to end), then time ringtrain bench for the paper's three models at batch 64 beside PyTorch's own
# training step on the same GPU, and print img/s and ringtrain / PyTorch.
#
# usage: bench/gpu_vs_pytorch.sh [--build DIR] [--ringtrain BIN] [--gpu-tests "BIN ..."] [--models "resnet101 ..."]
#                                [--precisions "fp32 tf32 bf16 fp16"] [--conv-algorithms "direct winograd"]
#                                [--windows N] [--cudnn-graph "off where_faster always"] [--cuda-graph "false true"]
#                                [--host-profile] [--results FILE] [--deadline SECONDS] [--table-only]
# ringtrain's conv_algorithm "direct" keeps cuDNN to its GEMM-family algorithms (exact to
# rounding); "winograd" also lets it pick FFT and Winograd, as PyTorch's cudnn.benchmark does.
# Without --ringtrain, configures and builds DIR (default build-cuda) with -DRINGTRAIN_CUDA=ON.
# PyTorch runs through $PYTHON (default python3) with torchvision: bf16 and fp16 under autocast
# (fp16 with its GradScaler) and channels_last, its fastest recipe for tensor cores, beside
# ringtrain's 16-bit NHWC. --cudnn-graph runs ringtrain once per train.cudnn_graph setting
# (default: off): with where_faster its convolutions may run plans of cuDNN's graph
# API, and the table says on how many directions they did. --host-profile adds, for each
# ringtrain run, the host's time issuing one step's work (ringtrain bench --profile, each layer
# issued onto an idle GPU) beside the unprofiled step: where the two are close, the host, not the
# GPU, sets the pace. --cuda-graph runs ringtrain once per train.cuda_graph setting (default
# false): with true every step after the first replays its recorded device work as one CUDA graph
# launch (Note [CUDA graph steps] in nn/device.h), which removes the host's cost of issuing it; the
# host profile is of issued steps either way, so beside a replayed step it shows what was saved.
#
# GPU time comes in bounded calls, so a sweep may take several, and a failure must not cost the
# figures already measured:
# - --results FILE keeps every result as a JSON line in FILE (default: a temporary file). A run
#   whose result FILE already holds is not run again, so the same command with the same FILE
#   carries on where an earlier call stopped. A ringtrain run that fails is kept as a "failed"
#   line (its exit status and last output printed), and the sweep goes on.
# - --deadline S starts no run once the seconds gone plus the longest run so far would pass S
#   (the suites always run), and says which runs it left.
# - --table-only prints the table of FILE and runs nothing.
# The exit status is 1 where a suite or a ringtrain run failed.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-cuda ringtrain="" gpu_tests="" models="resnet101 vgg16 inception_v3" precisions="fp32 tf32 bf16 fp16" windows=5
algorithms="direct winograd" graph_settings=off cuda_graphs=false host_profile=0
results="" deadline=0 table_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --ringtrain) ringtrain=$2; shift 2 ;;
    --gpu-tests) gpu_tests=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --precisions) precisions=$2; shift 2 ;;
    --windows) windows=$2; shift 2 ;;
    --conv-algorithms) algorithms=$2; shift 2 ;;
    --cudnn-graph) graph_settings=$2; shift 2 ;;
    --cuda-graph) cuda_graphs=$2; shift 2 ;;
    --host-profile) host_profile=1; shift ;;
    --results) results=$2; shift 2 ;;
    --deadline) deadline=$2; shift 2 ;;
    --table-only) table_only=1; shift ;;
    *) echo "gpu_vs_pytorch.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
py=${PYTHON:-python3}
[ -n "$results" ] || results=$(mktemp)
touch "$results"

# The table of every result in $results: ringtrain rows beside PyTorch's figure for the same model
# and precision.
print_table() {
  "$py" - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
torch = {(r["model"], r["precision"]): r["images_per_s"] for r in rows if r.get("kind") == "torch_gpu"}
print(f"{'model':14} {'precision':9} {'conv_algorithm':14} {'cudnn_graph':11} {'cuda_graph':10} {'ringtrain img/s':>16} {'PyTorch img/s':>14} {'ratio':>6}  host ms / step ms")
for r in rows:
    if r.get("kind") not in ("bench", "failed") or r.get("run") == "torch":  # scripts/check_gpu.sh's PyTorch failures
        continue
    replay = str(r.get("cuda_graph", False)).lower()
    run = f"{r['model']:14} {r['precision']:9} {r['conv_algorithm']:14} {r['cudnn_graph']:11} {replay:10}"
    t = torch.get((r["model"], r["precision"]))
    if r["kind"] == "failed":
        print(f"{run} {'failed':>16} {t or 0:14.1f}       (exit {r['exit']})")
        continue
    o = r["median_images_per_s"]
    ratio = f"{o / t:6.2f}" if t else "     -"
    skipped = f"  ({r['skipped_steps']} step(s) skipped for fp16 overflow)" if r.get("skipped_steps") else ""
    graph = f"  (cuDNN graph API on {r['cudnn_graph_directions']} direction(s))" if r.get("cudnn_graph_directions") else ""
    host = ""
    if "profiled_host_ms_per_step" in r:
        host = f"  {r['profiled_host_ms_per_step']:.1f} / {1e3 * r['batch_per_rank'] / o:.1f}"
    print(f"{run} {o:16.1f} {t or 0:14.1f} {ratio}{host}{skipped}{graph}")
PY
}
if [ "$table_only" = 1 ]; then
  print_table
  exit 0
fi

# Whether $results holds the run named by these fields: "torch_gpu MODEL PRECISION", or
# "bench MODEL PRECISION ALGORITHM GRAPH REPLAY PROFILED" (a failed run counts as held).
held() {
  "$py" - "$results" "$@" <<'PY'
import json, sys
path, kind, *key = sys.argv[1:]
def key_of(r):
    if r.get("kind") == "torch_gpu":
        return ["torch_gpu", r["model"], r["precision"]]
    if r.get("kind") in ("bench", "failed") and r.get("run") != "torch":
        profiled = r.get("profiled", "profiled_host_ms_per_step" in r)
        return ["bench", r["model"], r["precision"], r["conv_algorithm"], str(r["cudnn_graph"]),
                str(r["cuda_graph"]).lower(), str(profiled).lower()]
rows = [json.loads(l) for l in open(path) if l.startswith("{")]
sys.exit(0 if any(key_of(r) == [kind] + key for r in rows) else 1)
PY
}

# Whether a run may start before the deadline; says so where it may not.
start=$SECONDS longest=0 failures=0
may_start() {
  local gone=$((SECONDS - start))
  if [ "$deadline" -gt 0 ] && [ $((gone + longest)) -gt "$deadline" ]; then
    echo "== left for a later call (deadline ${deadline} s; ${gone} s gone, the longest run took ${longest} s): $*"
    return 1
  fi
}
note_duration() { [ "$1" -gt "$longest" ] && longest=$1; return 0; }

if [ -z "$ringtrain" ]; then
  cmake -S . -B "$build" -DRINGTRAIN_CUDA=ON >/dev/null
  cmake --build "$build" -j "$(nproc)"
  ringtrain=$build/ringtrain gpu_tests="$build/tests/nn/test_gpu_parity $build/tests/app/test_gpu_training"
fi
"$ringtrain" info | sed -n '1,4p'

for suite in $gpu_tests; do
  echo "== GPU suite $(basename "$suite")"
  "$suite" --gtest_brief=1 || { echo "== GPU suite $(basename "$suite") FAILED"; failures=$((failures + 1)); }
done

profiles=$(mktemp -d) log=$(mktemp)
echo "== ringtrain bench and PyTorch, batch 64, $windows windows of 10 steps each; results in $results"
for model in $models; do
  res=224; [ "$model" = inception_v3 ] && res=299
  for precision in $precisions; do
    for algorithm in $algorithms; do
      for graph in $graph_settings; do
        for replay in $cuda_graphs; do
          profiled=false; [ "$host_profile" = 1 ] && profiled=true
          what="ringtrain $model $precision $algorithm cudnn_graph=$graph cuda_graph=$replay"
          held bench "$model" "$precision" "$algorithm" "$graph" "$replay" "$profiled" && continue
          may_start "$what" || continue
          profile=()
          [ "$host_profile" = 1 ] && profile=(--profile "$profiles/$model-$precision-$algorithm-$graph-$replay.profile")
          t0=$SECONDS rc=0
          "$ringtrain" bench --config "configs/$model.toml" --set train.device=cuda --set train.cudnn_graph="$graph" \
            --set train.precision="$precision" --set train.conv_algorithm="$algorithm" --set bench.windows="$windows" \
            --set train.cuda_graph="$replay" "${profile[@]}" >"$log" 2>&1 || rc=$?
          note_duration $((SECONDS - t0))
          if [ "$rc" = 0 ] && grep -q '^{' "$log"; then
            grep '^{' "$log" >>"$results"
            echo "== $what: $(sed -n 's/^{.*"median_images_per_s":\([0-9.]*\).*/\1/p' "$log") img/s ($((SECONDS - t0)) s)"
          else
            failures=$((failures + 1))
            echo "== $what FAILED (exit $rc); its last lines:"
            tail -n 15 "$log"
            printf '{"kind":"failed","model":"%s","precision":"%s","conv_algorithm":"%s","cudnn_graph":"%s","cuda_graph":%s,"profiled":%s,"exit":%s}\n' \
              "$model" "$precision" "$algorithm" "$graph" "$replay" "$profiled" "$rc" >>"$results"
          fi
        done
      done
    done
    held torch_gpu "$model" "$precision" && continue
    may_start "PyTorch $model $precision" || continue
    layout=()
    [[ $precision == bf16 || $precision == fp16 ]] && layout=(--channels-last)
    t0=$SECONDS
    if "$py" bench/torch_gpu_train.py "$model" 64 "$res" "$precision" --windows "$windows" "${layout[@]}" >"$log"; then
      grep '^{' "$log" >>"$results"
      echo "== PyTorch $model $precision: $(sed -n 's/^{.*"images_per_s": \([0-9.]*\).*/\1/p' "$log") img/s ($((SECONDS - t0)) s)"
    else
      failures=$((failures + 1))
      echo "== PyTorch $model $precision FAILED"
    fi
    note_duration $((SECONDS - t0))
  done
done

print_table
[ "$failures" = 0 ]
