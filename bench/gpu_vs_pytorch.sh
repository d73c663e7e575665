#!/usr/bin/env bash
# On a machine with a GPU: build ringtrain with CUDA (unless given binaries), run the GPU suites
# (op parity, and the trainer end to end), then time ringtrain bench for the paper's three models at batch 64 beside PyTorch's own
# training step on the same GPU, and print img/s and ringtrain / PyTorch.
#
# usage: bench/gpu_vs_pytorch.sh [--build DIR] [--ringtrain BIN] [--gpu-tests "BIN ..."] [--models "resnet101 ..."]
#                                [--precisions "fp32 tf32 bf16 fp16"] [--conv-algorithms "direct winograd"]
#                                [--windows N] [--cudnn-graph "0 1 always"] [--cuda-graph "false true"]
#                                [--host-profile]
# ringtrain's conv_algorithm "direct" keeps cuDNN to its GEMM-family algorithms (exact to
# rounding); "winograd" also lets it pick FFT and Winograd, as PyTorch's cudnn.benchmark does.
# Without --ringtrain, configures and builds DIR (default build-cuda) with -DRINGTRAIN_CUDA=ON.
# PyTorch runs through $PYTHON (default python3) with torchvision: bf16 and fp16 under autocast
# (fp16 with its GradScaler) and channels_last, its fastest recipe for tensor cores, beside
# ringtrain's 16-bit NHWC. --cudnn-graph runs ringtrain once per RINGTRAIN_CUDNN_GRAPH setting
# (default: the environment's, else 0): with 1 its convolutions may run plans of cuDNN's graph
# API, and the table says on how many directions they did. --host-profile adds, for each
# ringtrain run, the host's time issuing one step's work (ringtrain bench --profile, each layer
# issued onto an idle GPU) beside the unprofiled step: where the two are close, the host, not the
# GPU, sets the pace. --cuda-graph runs ringtrain once per train.cuda_graph setting (default
# false): with true every step after the first replays its recorded device work as one CUDA graph
# launch (Note [Captured steps] in nn/device.h), which removes the host's cost of issuing it; the
# host profile is of issued steps either way, so beside a replayed step it shows what was saved.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-cuda ringtrain="" gpu_tests="" models="resnet101 vgg16 inception_v3" precisions="fp32 tf32 bf16 fp16" windows=5
algorithms="direct winograd" graph_settings=${RINGTRAIN_CUDNN_GRAPH:-0} cuda_graphs=false host_profile=0
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
    *) echo "gpu_vs_pytorch.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
py=${PYTHON:-python3}

if [ -z "$ringtrain" ]; then
  cmake -S . -B "$build" -DRINGTRAIN_CUDA=ON >/dev/null
  cmake --build "$build" -j "$(nproc)"
  ringtrain=$build/ringtrain gpu_tests="$build/tests/nn/test_gpu_parity $build/tests/app/test_gpu_training"
fi
"$ringtrain" info | sed -n '1,4p'

for suite in $gpu_tests; do
  echo "== GPU suite $(basename "$suite")"
  "$suite" --gtest_brief=1
done

out=$(mktemp) profiles=$(mktemp -d)
echo "== ringtrain bench and PyTorch, batch 64, $windows windows of 10 steps each"
for model in $models; do
  res=224; [ "$model" = inception_v3 ] && res=299
  for precision in $precisions; do
    for algorithm in $algorithms; do
      for graph in $graph_settings; do
        for replay in $cuda_graphs; do
          profile=()
          [ "$host_profile" = 1 ] && profile=(--profile "$profiles/$model-$precision-$algorithm-$graph-$replay.profile")
          RINGTRAIN_CUDNN_GRAPH=$graph "$ringtrain" bench --config "configs/$model.toml" --set train.device=cuda \
            --set train.precision="$precision" --set train.conv_algorithm="$algorithm" --set bench.windows="$windows" \
            --set train.cuda_graph="$replay" "${profile[@]}" | grep '^{' >>"$out"
        done
      done
    done
    layout=()
    [[ $precision == bf16 || $precision == fp16 ]] && layout=(--channels-last)
    "$py" bench/torch_gpu_train.py "$model" 64 "$res" "$precision" --windows "$windows" "${layout[@]}" >>"$out"
  done
done

"$py" - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
torch = {(r["model"], r["precision"]): r["images_per_s"] for r in rows if r.get("kind") == "torch_gpu"}
print(f"{'model':14} {'precision':9} {'conv_algorithm':14} {'cudnn_graph':11} {'cuda_graph':10} {'ringtrain img/s':>16} {'PyTorch img/s':>14} {'ratio':>6}  host ms / step ms")
for r in rows:
    if r.get("kind") != "bench":
        continue
    o, t = r["median_images_per_s"], torch.get((r["model"], r["precision"]))
    ratio = f"{o / t:6.2f}" if t else "     -"
    skipped = f"  ({r['skipped_steps']} step(s) skipped for fp16 overflow)" if r.get("skipped_steps") else ""
    graph = f"  (cuDNN graph API on {r['cudnn_graph_directions']} direction(s))" if r.get("cudnn_graph_directions") else ""
    host = ""
    if "profiled_host_ms_per_step" in r:
        host = f"  {r['profiled_host_ms_per_step']:.1f} / {1e3 * r['batch_per_rank'] / o:.1f}"
    replay = str(r.get("cuda_graph", False)).lower()
    print(f"{r['model']:14} {r['precision']:9} {r['conv_algorithm']:14} {r['cudnn_graph']:11} {replay:10} {o:16.1f} {t or 0:14.1f} {ratio}{host}{skipped}{graph}")
PY
