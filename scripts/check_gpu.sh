#!/usr/bin/env bash
# Checks ringtrain on this machine's GPU in under 8 minutes, from a kit that scripts/gpu_kit.sh
# prepared elsewhere (nothing is built here): the versions, the GPU suites, ringtrain's training
# step against PyTorch's at batch 64, and a per-layer profile of the worst ratio. docs/gpu.md
# ("Checking a GPU machine") says how to read what it writes.
#
# usage: scripts/check_gpu.sh --kit KIT.tar.xz|KIT_DIR --out DIR [--models "resnet101 vgg16 inception_v3"]
#                             [--precisions "bf16 tf32 fp32 fp16"] [--parts "versions ops ..."] [--scale F]
#   --out DIR     where the results go (at most 7 files), each written as its part ends, so that a
#                 run cut off at its time limit still leaves what it measured
#   --parts LIST  run only these parts (names from the table below), in the table's order
#   --scale F     multiplies every part's deadline (the dry run in the tests uses small ones)
# PyTorch runs through $PYTHON (default python3), which needs torch and torchvision.
#
# Each part runs under its own deadline, so a hang or a slow part cannot take the others' time.
# Expected seconds on one H100 or H200 (they are also the deadlines; the code that uses them is the
# `budget` table below, and the dry run checks that the two agree):
#
# | # | part      | s   | what it runs                                                            |
# |---|-----------|-----|-------------------------------------------------------------------------|
# | 1 | versions  | 25  | GPU and driver, ringtrain info (CUDA, cuDNN, NCCL), cuBLAS, PyTorch; the kit's libraries |
# | 2 | ops       | 45  | op parity at fp32/tf32: linear, ReLU/add/concat, pooling, dropout, loss and SGD, CUDA-graph replay, convolution (Winograd too), batch norm, agreed reductions, group batch norm |
# | 3 | ops16     | 40  | the same ops at bf16 and fp16 in 16-bit NHWC                            |
# | 4 | ring      | 35  | the ring on GPU memory at 1 rank (NCCL), 3 and 4 ranks (host-staged, two-level 2 x 2); 2 ranks over NCCL where there are 2 GPUs |
# | 5 | trainer   | 60  | the trainer end to end: LARS, clipping and accumulation against the CPU, CUDA-graph replay and a GPU checkpoint at 4 precisions, then Fashion-MNIST |
# | 6 | graph_api | 35  | cuDNN's graph API convolutions; a sample of model steps (VGG-16 fp32, ResNet-101 bf16) |
# | 7 | images    | 30  | ResNet-50 trained from a JPEG folder on the GPU (page-locked slots, decoding threads), with SGD and with LARS |
# | 8 | speed     | 165 | ringtrain bench beside PyTorch, batch 64: bf16 (cudnn_graph and cuda_graph searched per model), tf32, then fp32 and fp16 as time allows |
# | 9 | profile   | 35  | ringtrain bench --profile and PyTorch's profiler on the worst ratio's step |
# |   | total     | 470 |                                                                         |
#
# The results in DIR: summary.md (each part's time and verdict as it ends; the speed table at the end),
# versions.txt, suites.log (the suites' own output), speed.jsonl (one JSON line per run, as
# bench/gpu_vs_pytorch.sh keeps them), speed_table.txt, profile.txt, check.log (everything printed).
# The exit status is 1 when a part failed or ran out of time.
set -uo pipefail
cd "$(dirname "$0")/.."

declare -A budget=([versions]=25 [ops]=45 [ops16]=40 [ring]=35 [trainer]=60 [graph_api]=35 [images]=30 [speed]=165 [profile]=35)
parts=(versions ops ops16 ring trainer graph_api images speed profile)

selected="${parts[*]}" kit="" out="" scale=1 models="resnet101 vgg16 inception_v3" precisions="bf16 tf32 fp32 fp16"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kit) kit=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --precisions) precisions=$2; shift 2 ;;
    --parts) selected=$2; shift 2 ;;
    *) echo "check_gpu: unknown argument '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
[[ -n $kit && -n $out ]] || { echo "check_gpu: --kit and --out are required (see the usage at the top of $0)" >&2; exit 2; }
[[ -e $kit ]] || { echo "check_gpu: --kit $kit: no such file or folder (scripts/gpu_kit.sh makes it)" >&2; exit 2; }
for name in $selected; do
  [[ " ${parts[*]} " == *" $name "* ]] || { echo "check_gpu: --parts: no part '$name' (the parts: ${parts[*]})" >&2; exit 2; }
done
py=${PYTHON:-python3}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/{summary.md,versions.txt,suites.log,speed.jsonl,speed_table.txt,profile.txt,check.log}
work=$(mktemp -d "${TMPDIR:-/tmp}/ringtrain-check.XXXXXX") lent_fmnist=""
trap 'rm -rf "$work"; [[ -z $lent_fmnist ]] || rm -f "$lent_fmnist"' EXIT
exec > >(tee -a "$out/check.log") 2>&1

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.2f\", $* }"; }
started=$(now) failures=0

# --- the kit -------------------------------------------------------------------------------------
if [[ -f $kit ]]; then
  if command -v xz >/dev/null; then
    tar -C "$work" -xJf "$kit" || { echo "check_gpu: cannot unpack $kit" >&2; exit 2; }
  else  # an image without xz: Python's tarfile reads it
    "$py" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$kit" "$work" ||
      { echo "check_gpu: cannot unpack $kit" >&2; exit 2; }
  fi
  kit=$(find "$work" -mindepth 2 -maxdepth 2 -name env.sh -printf '%h\n' | head -1)
fi
kit=$(cd "$kit" && pwd)
[[ -f $kit/env.sh ]] || { echo "check_gpu: $kit has no env.sh: not a kit from scripts/gpu_kit.sh" >&2; exit 2; }
# PyTorch keeps this machine's library path; ringtrain's programs get the kit's (env.sh).
torch_py=(env "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" "$py")
# shellcheck source=/dev/null
source "$kit/env.sh"
# The training tests read Fashion-MNIST where Debian installs it; lend them the kit's copy.
fmnist=/usr/share/datasets/fashion-mnist
if [[ ! -e $fmnist/train-images-idx3-ubyte.gz && ! -e $fmnist && -d $kit/data/fashion-mnist ]]; then
  if mkdir -p "$(dirname "$fmnist")" 2>/dev/null && ln -s "$kit/data/fashion-mnist" "$fmnist" 2>/dev/null; then
    lent_fmnist=$fmnist  # taken away again at the end
  else
    echo "check_gpu: cannot place Fashion-MNIST at $fmnist (not root?): its training tests will skip"
  fi
fi

# --- parts and their deadlines -------------------------------------------------------------------
summary=$out/summary.md suites=$out/suites.log
{
  echo "# ringtrain GPU check, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  sed 's/^/- kit: /' "$kit/VERSION" 2>/dev/null
  echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || echo none)"
  echo "- scale of the deadlines: $scale"
  echo
  echo "| # | part | expected s | took s | result |"
  echo "|---|---|---|---|---|"
} >"$summary"

part_no=0
part_begin() {  # part_begin NAME: starts a part's clock
  part=$1 part_no=$((part_no + 1)) part_t0=$(now) part_result="" part_bad=0
  part_deadline=$(calc "$part_t0 + $scale * ${budget[$part]}")
  echo "== part $part_no, $part: deadline $(calc "$scale * ${budget[$part]}") s"
}
left() { calc "$part_deadline - $(now)"; }
note() {
  local words
  words=$(echo "$*" | sed 's/  */ /g; s/ *$//')
  part_result="${part_result:+$part_result; }$words"
}
part_end() {
  local took
  took=$(calc "$(now) - $part_t0")
  [[ -n $part_result ]] || part_result="ran"
  [[ $part_bad == 1 ]] && failures=$((failures + 1))
  echo "| $part_no | $part | $(calc "$scale * ${budget[$part]}") | $took | $part_result |" >>"$summary"
  echo "== part $part_no, $part: $part_result ($took s)"
}

# run LABEL CMD...: runs CMD under what is left of the part's deadline, its output into suites.log,
# and notes the verdict: a gtest run's counts and failed tests, or the exit status; a run cut off
# names the test it was in.
run() {
  local label=$1 rc=0 log=$work/run.log remaining
  shift
  remaining=$(left)
  if awk "BEGIN { exit !($remaining <= 0) }"; then
    note "$label: not started, the part's time was spent"; part_bad=1; return 1
  fi
  echo "== $part: $label: $*" >>"$suites"
  timeout -k 2 "$remaining" "$@" >"$log" 2>&1 || rc=$?
  cat "$log" >>"$suites"
  local passed failed skipped names
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  failed=$(grep -E '^\[  FAILED  \] [A-Za-z]' "$log" | sed 's/^\[  FAILED  \] \([^ ,]*\).*/\1/' | sort -u | paste -sd' ')
  local counts=""
  [[ -n $passed ]] && counts="$passed passed"
  [[ -n $skipped && $skipped != 0 ]] && counts="${counts:+$counts, }$skipped skipped"
  if [[ $rc == 124 || $rc == 137 ]]; then
    names=$(sed -n 's/^\[ RUN      \] //p' "$log" | tail -1)
    note "$label: TIMED OUT${names:+ in $names}${counts:+ after $counts}"; part_bad=1
  elif [[ $rc != 0 ]]; then
    note "$label: FAILED (exit $rc)${failed:+: $failed}${counts:+; $counts}"; part_bad=1
    [[ -z $failed ]] && tail -n 5 "$log" | sed 's/^/    /'
  elif grep -q '^\[==========\] 0 tests' "$log"; then
    note "$label: NO TEST MATCHED the filter"; part_bad=1
  else
    note "$label: ${counts:-passed}"
  fi
  return "$rc"
}

# --- 1. versions ---------------------------------------------------------------------------------
versions() {
  {
    echo "# versions"
    cat "$kit/VERSION" 2>/dev/null
    nvidia-smi 2>&1 | head -n 12 || echo "nvidia-smi: not found"
    echo
    timeout "$(left)" ringtrain info 2>&1 | head -n 4
    echo
    echo "Fashion-MNIST for the training tests: $fmnist${lent_fmnist:+, lent from the kit until the check ends}$([[ -e $fmnist/train-images-idx3-ubyte.gz ]] || echo ', missing')"
    echo
    echo "# the kit's libraries, and the CUDA libraries this machine provides (cuBLAS, cuDNN, NCCL)"
    timeout "$(left)" bash scripts/gpu_kit.sh --verify "$kit" 2>&1
    echo
    timeout "$(left)" "${torch_py[@]}" -c 'import torch, torchvision
print("PyTorch", torch.__version__, "torchvision", torchvision.__version__, "CUDA", torch.version.cuda, "cuDNN",
      torch.backends.cudnn.version(), "NCCL", ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "-")' 2>&1 | tail -n 1
  } >"$out/versions.txt" 2>&1
  grep -q "every library is in the kit" "$out/versions.txt" && note "libraries complete" || { note "LIBRARIES MISSING (versions.txt)"; part_bad=1; }
  cuda_line=$(grep -m1 '^  CUDA:' "$out/versions.txt" | sed 's/^ *//')
  [[ -n $cuda_line ]] && note "$cuda_line"
}

# --- 2-6. the suites -----------------------------------------------------------------------------
export GTEST_COLOR=no
ops() {
  run parity test_gpu_parity --gtest_filter='GpuParity.Linear*:GpuParity.ReluAdd*:GpuParity.Pooling*:GpuParity.Dropout*:GpuParity.SoftmaxCrossEntropyAndSgd:GpuParity.CudaGraph*:GpuParity.Conv2dFp32:GpuParity.Conv2dTf32:GpuParity.Conv2dWinograd*:GpuParity.BatchNorm*:GpuParity.AgreedReductions*:GpuParity.GroupBatchNorm*'
}

ops16() {
  run mixed_precision test_gpu_parity --gtest_filter='*GpuMixedPrecision.*-*Step*:*ShortTraining*:*GraphApi*:*WhicheverCudnnApi*'
}

ring() {
  run np1 test_gpu_ring
  run np3 bash scripts/mpi_launch.sh --testing -np 3 test_gpu_ring
  run np4 bash scripts/mpi_launch.sh --testing -np 4 test_gpu_ring
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if [[ ${gpus:-0} -ge 2 ]]; then
    run np2_nccl bash scripts/mpi_launch.sh --testing -np 2 test_gpu_ring
  else
    note "NCCL between GPUs not run (${gpus:-0} GPU)"
  fi
}

trainer() {
  run features_replay_checkpoint test_gpu_training --gtest_filter='*GpuLongRunFeature.*:*Replayed*:*Checkpoint*'
  run fashion_mnist test_gpu_training --gtest_filter='*FashionMnist*'
}

graph_api() {
  run graph_api test_gpu_parity --gtest_filter='*GraphApi*:*WhicheverCudnnApi*'
  run model_steps test_gpu_parity --gtest_filter='GpuParity.Vgg16Step:*GpuMixedPrecision.ResNet101Step/bf16'
}

# --- 7. training from a JPEG folder --------------------------------------------------------------
images() {
  local photos optimizer
  photos=$work/photos
  if run make_photos "${torch_py[@]}" bench/make_photo_tree.py --synthetic "$photos/train" --images 512 &&
    run make_val "${torch_py[@]}" bench/make_photo_tree.py --synthetic "$photos/val" --images 64; then
    for optimizer in sgd lars; do
      run "resnet50_$optimizer" ringtrain train --config configs/resnet101.toml --set model.name=resnet50 \
        --set model.num_classes=10 --set 'data.mean=[0.485,0.456,0.406]' \
        --set 'data.std=[0.229,0.224,0.225]' --set data.source=imagefolder --set data.dir="$photos" --set train.epochs=1 \
        --set train.device=cuda --set train.precision=bf16 --set train.optimizer="$optimizer" \
        --set checkpoint.dir="$work/run_$optimizer" --set log.progress=none &&
        note "$optimizer: $(grep -m1 -o 'train loss [0-9.na]*\|data wait [0-9.]*%' "$work/run.log" | paste -sd, | sed 's/,/, /g')"
    done
  fi
}

# --- 8. speed ------------------------------------------------------------------------------------
speed=$out/speed.jsonl longest=$(calc "15 * $scale")
may_start() {  # may_start WHAT: whether a run as long as the longest so far still ends in time
  if awk "BEGIN { exit !($(left) < $longest) }"; then
    echo "== left for lack of time: $*"; skipped_runs=$((skipped_runs + 1)); return 1
  fi
}
timed() {  # timed CMD...: runs CMD, keeps the longest duration
  local t rc=0
  t=$(now)
  "$@" || rc=$?
  t=$(calc "$(now) - $t")
  awk "BEGIN { exit !($t > $longest) }" && longest=$t
  return "$rc"
}
# The two sides' steps as the speed and profile parts run them, into the array `step`. ringtrain,
# batch 64 from the model's config: rt_bench_step MODEL PRECISION GRAPH REPLAY. PyTorch, in its
# best layout for the precision (channels_last for 16 bits), at the model's size: torch_step MODEL
# PRECISION.
rt_bench_step() {
  step=(ringtrain bench --config "configs/$1.toml" --set train.device=cuda --set train.precision="$2"
        --set train.conv_algorithm=winograd --set train.cudnn_graph="$3" --set train.cuda_graph="$4"
        --set bench.warmup_steps=5)
}
torch_step() {
  local res=224 layout=()
  [[ $1 == inception_v3 ]] && res=299
  [[ $2 == bf16 || $2 == fp16 ]] && layout=(--channels-last)
  step=("${torch_py[@]}" bench/torch_gpu_train.py "$1" 64 "$res" "$2" "${layout[@]}")
}
# keep_run WHAT LOG RC RATE [FAILED]: a finished run's JSON line into speed.jsonl and its rate (RATE:
# the sed that finds it) on the console; a run stopped at the deadline counted as left; a failed one
# shown, with the FAILED line into speed.jsonl where given (status 1).
keep_run() {
  local what=$1 log=$2 rc=$3 rate=$4 failed=${5:-}
  if [[ $rc == 0 ]] && grep -q '^{' "$log"; then
    grep '^{' "$log" >>"$speed"
    echo "== $what: $(sed -n "$rate" "$log") img/s"
  elif [[ $rc == 124 || $rc == 137 ]]; then
    echo "== $what: stopped at the part's deadline"
    skipped_runs=$((skipped_runs + 1))
  else
    echo "== $what FAILED (exit $rc):"
    tail -n 8 "$log"
    [[ -z $failed ]] || echo "$failed" >>"$speed"
    return 1
  fi
}
rt_bench() {  # rt_bench MODEL PRECISION GRAPH REPLAY [ARGS...]: one ringtrain bench run into speed.jsonl
  local model=$1 precision=$2 graph=$3 replay=$4 rc=0 log=$work/bench.log step
  shift 4
  rt_bench_step "$model" "$precision" "$graph" "$replay"
  timeout -k 2 "$(left)" "${step[@]}" --set bench.windows=3 "$@" >"$log" 2>&1 || rc=$?
  keep_run "ringtrain $model $precision cudnn_graph=$graph cuda_graph=$replay" "$log" "$rc" \
    's/^{.*"median_images_per_s":\([0-9.]*\).*/\1/p' \
    "$(printf '{"kind":"failed","model":"%s","precision":"%s","conv_algorithm":"winograd","cudnn_graph":"%s","cuda_graph":%s,"profiled":false,"exit":%s}' \
      "$model" "$precision" "$graph" "$replay" "$rc")"
}
torch_bench() {  # torch_bench MODEL PRECISION [ARGS...]: PyTorch's step, its best layout for the precision
  local model=$1 precision=$2 rc=0 log=$work/torch.log step
  shift 2
  torch_step "$model" "$precision"
  timeout -k 2 "$(left)" "${step[@]}" --windows 3 "$@" >"$log" 2>&1 || rc=$?
  keep_run "PyTorch $model $precision" "$log" "$rc" 's/^{.*"images_per_s": \([0-9.]*\).*/\1/p'
}
best_setting() {  # best_setting MODEL: "GRAPH REPLAY" of its fastest bf16 run so far (default "off false")
  "$py" scripts/check_gpu_speed.py "$speed" best-setting "$1"
}
table() {  # speed_table.txt: the best setting of each row against PyTorch, then every run
  { speed_summary; echo; echo "## Every run"; echo
    PYTHON=$py bash bench/gpu_vs_pytorch.sh --table-only --results "$speed"; } >"$out/speed_table.txt" 2>&1
}
speed() {
  local precision model graph replay runs ran
  : >>"$speed"
  skipped_runs=0 speed_failures=0
  for precision in $precisions; do
    for model in $models; do
      ran=0
      if [[ $precision == bf16 ]]; then
        # The search: cuDNN's graph API where faster against the legacy API alone, then CUDA-graph
        # replay with the better of the two.
        for graph in off where_faster; do
          if may_start "ringtrain $model bf16 cudnn_graph=$graph"; then
            ran=1
            timed rt_bench "$model" bf16 "$graph" false || speed_failures=$((speed_failures + 1))
          fi
        done
        if may_start "ringtrain $model bf16 with CUDA-graph replay"; then
          ran=1
          read -r graph _ < <(best_setting "$model")
          timed rt_bench "$model" bf16 "$graph" true || speed_failures=$((speed_failures + 1))
        fi
      elif may_start "ringtrain $model $precision"; then
        ran=1
        read -r graph replay < <(best_setting "$model")
        timed rt_bench "$model" "$precision" "$graph" "$replay" || speed_failures=$((speed_failures + 1))
      fi
      if may_start "PyTorch $model $precision"; then
        ran=1
        timed torch_bench "$model" "$precision" || speed_failures=$((speed_failures + 1))
      fi
      [[ $ran == 1 ]] && table
    done
  done
  runs=$(grep -c '^{' "$speed" || true)
  note "$runs runs, $speed_failures failed, $skipped_runs left or stopped for lack of time"
  [[ $speed_failures == 0 ]] || part_bad=1
}

# The best ringtrain row of each model and precision against PyTorch's.
speed_summary() { "$py" scripts/check_gpu_speed.py "$speed" summary; }

# --- 9. profile of the worst ratio ---------------------------------------------------------------
profile() {
  local model precision graph replay profile step
  read -r model precision graph replay < <("$py" scripts/check_gpu_speed.py "$speed" worst)
  if [[ -z ${model:-} ]]; then
    note "no ratio measured, nothing to profile"
  else
    note "$model $precision"
    profile=$out/profile.txt
    echo "# The worst ratio: $model $precision (cudnn_graph=$graph cuda_graph=$replay)" >"$profile"
    rt_bench_step "$model" "$precision" "$graph" "$replay"
    if run ringtrain_profile "${step[@]}" --set bench.windows=2 --set bench.steps_per_window=5 \
      --profile "$work/ringtrain.profile"; then
      { echo; echo "## ringtrain bench --profile (seconds per step)"; cat "$work/ringtrain.profile"; } >>"$profile"
    fi
    torch_step "$model" "$precision"
    if run pytorch_profile "${step[@]}" --steps 5 --windows 2 --profile "$work/torch.profile"; then
      { echo; echo "## PyTorch's profiler"; cat "$work/torch.profile"; } >>"$profile"
    fi
  fi
}

# --- the parts, in order, each under its deadline --------------------------------------------------
for name in "${parts[@]}"; do
  [[ " $selected " == *" $name "* ]] || continue
  part_begin "$name"
  "$name"
  part_end
done

total=$(calc "$(now) - $started")
echo "== the check took $total s; $failures part(s) failed or ran out of time; results in $out"
{ echo; echo "Total: $total s; $failures part(s) failed or ran out of time."; } >>"$summary"
[[ -s $speed ]] && speed_summary >>"$summary"
[[ $failures == 0 ]]
