#!/usr/bin/env bash
# Checks ringtrain on this machine's GPU in at most 9 minutes, from a kit that scripts/gpu_kit.sh
# prepared elsewhere (nothing is built here): the versions, the GPU suites, ringtrain's training
# step against PyTorch's at batch 64, and a per-layer profile of the worst ratio. docs/gpu.md
# ("Checking a GPU machine") says how to read what it writes, and which rerun fits after it.
#
# usage: scripts/check_gpu.sh --kit KIT.tar.xz|KIT_DIR --out DIR [--models "resnet101 vgg16 inception_v3"]
#                             [--precisions "bf16 tf32 fp32 fp16"] [--parts "versions ops ..."]
#                             [--seconds "PART=S ..."] [--from DIR] [--scale F]
#   --out DIR     where the results go (at most 7 files), each written as its part ends (summary.md
#                 and the speed tables after every timed run too), so that a run cut off at its time
#                 limit still leaves what it measured
#   --parts LIST  run only these parts (names from the table below), in the table's order
#   --seconds     deadlines of the named parts instead of the table's ("speed=105")
#   --from DIR    the speed part carries on from DIR/speed.jsonl (an earlier check's): the runs it
#                 holds, failed ones too, are not run again, and its run times are the estimates
#   --scale F     multiplies every deadline, the kit's too (a positive number; the dry run in the tests
#                 uses small ones)
# PyTorch runs through $PYTHON (default python3), which needs torch and torchvision.
#
# The kit and each part run under their own deadline, so a hang or a slow part cannot take the
# others' time: a command is stopped 1.5 s before its part's deadline, and whatever it left
# running (a rank its launcher lost) is found by a token in its environment and killed. The
# deadlines add up to 535 s, 9 minutes with room for the check's own bookkeeping. They are the
# code's `budget` table below (the dry run checks that the two agree). No GPU has run this check
# yet, so every figure is an estimate for one H100 or H200 with 16 cores; the "took s" column of the
# first window's summary.md is the measurement that replaces it.
#
# | # | part      | s   | basis     | what it runs                                                 |
# |---|-----------|-----|-----------|--------------------------------------------------------------|
# | 0 | kit       | 15  | estimated | unpacking the kit (xz, or Python's tarfile), sourcing its env.sh (PyTorch's wheels found, not imported) |
# | 1 | versions  | 25  | estimated | GPU and driver, ringtrain info (CUDA, cuDNN, NCCL), cuBLAS, PyTorch; the kit's libraries |
# | 2 | ops       | 45  | estimated | op parity at fp32/tf32: linear (and TF32's speed over fp32), ReLU/add/concat, pooling, dropout, loss and SGD, CUDA-graph replay, convolution (Winograd too), batch norm, agreed reductions, group batch norm |
# | 3 | ops16     | 40  | estimated | the same ops at bf16 and fp16 in 16-bit NHWC                 |
# | 4 | ring      | 45  | estimated | the ring on GPU memory at 1 rank (NCCL), 3 and 4 ranks (host-staged, two-level 2 x 2), the trainer's sharded SGD and LARS, PowerSGD's kernels and GradReducer, and its products' ns per element; 2 ranks over NCCL where there are 2 GPUs |
# | 5 | trainer   | 60  | estimated | the trainer end to end: LARS, clipping and accumulation against the CPU, CUDA-graph replay and a GPU checkpoint at 4 precisions, then Fashion-MNIST |
# | 6 | graph_api | 25  | estimated | cuDNN's graph API convolutions                               |
# | 7 | steps     | 45  | estimated | model steps against the CPU: ResNet-101 fp32, VGG-16 fp32, ResNet-101 bf16, then Inception-v3 fp32 |
# | 8 | images    | 25  | estimated | ResNet-50 trained from a JPEG folder on the GPU (page-locked slots, decoding threads), evaluated at the training batch |
# | 9 | speed     | 165 | estimated | ringtrain bench beside PyTorch, batch 64: every model's bf16 ratio first, CUDA-graph replay, then cuDNN's graph API; tf32, fp32 and fp16 as time allows |
# | 10 | profile  | 45  | estimated | ringtrain bench --profile and PyTorch's profiler on the worst ratio's step, each where its estimate fits |
# |   | total     | 535 |           |                                                              |
#
# The results in DIR: summary.md (each part's time and verdict as it ends; the speed tables after
# it), versions.txt, suites.log (the suites' own output), speed.jsonl (one JSON line per run, as
# bench/gpu_vs_pytorch.sh keeps them, with each run's seconds), speed_table.txt, profile.txt,
# check.log (everything printed). The exit status is 1 when a part failed or ran out of time.
set -uo pipefail
cd "$(dirname "$0")/.."

declare -A budget=([kit]=15 [versions]=25 [ops]=45 [ops16]=40 [ring]=45 [trainer]=60 [graph_api]=25 [steps]=45 [images]=25 [speed]=165 [profile]=45)
parts=(versions ops ops16 ring trainer graph_api steps images speed profile)

selected="${parts[*]}" kit="" out="" from="" scale=1 models="resnet101 vgg16 inception_v3" precisions="bf16 tf32 fp32 fp16"
seconds=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kit) kit=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --from) from=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --precisions) precisions=$2; shift 2 ;;
    --parts) selected=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) echo "check_gpu: unknown argument '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
[[ -n $kit && -n $out ]] || { echo "check_gpu: --kit and --out are required (see the usage at the top of $0)" >&2; exit 2; }
[[ -e $kit ]] || { echo "check_gpu: --kit $kit: no such file or folder (scripts/gpu_kit.sh makes it)" >&2; exit 2; }
for name in $selected; do
  [[ " ${parts[*]} " == *" $name "* ]] || { echo "check_gpu: --parts: no part '$name' (the parts: ${parts[*]})" >&2; exit 2; }
done
for pair in $seconds; do
  name=${pair%%=*} value=${pair#*=}
  [[ -n ${budget[$name]:-} && $value =~ ^[0-9]+$ ]] ||
    { echo "check_gpu: --seconds: '$pair' is not PART=SECONDS (the parts: kit ${parts[*]})" >&2; exit 2; }
  budget[$name]=$value
done
if ! [[ $scale =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] || ! LC_ALL=C awk "BEGIN { exit !($scale > 0) }"; then
  echo "check_gpu: --scale $scale: not a positive number" >&2; exit 2
fi
[[ -z $from || -f $from/speed.jsonl ]] || { echo "check_gpu: --from $from: no speed.jsonl there" >&2; exit 2; }
py=${PYTHON:-python3}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ringtrain-check.XXXXXX") lent_fmnist=""
trap 'rm -rf "$work"; [[ -z $lent_fmnist ]] || rm -f "$lent_fmnist"' EXIT
[[ -z $from ]] || cp "$from/speed.jsonl" "$work/from.jsonl"  # before --out is emptied: it may be the same folder
rm -f "$out"/{summary.md,versions.txt,suites.log,speed.jsonl,speed_table.txt,profile.txt,check.log}
exec > >(tee -a "$out/check.log") 2>&1

now() { date +%s.%N; }
calc() { LC_ALL=C awk "BEGIN { printf \"%.2f\", $* }"; }
# duration SECONDS: what `timeout` is given for a limit computed from what is left of a deadline,
# however late it is computed: at least 0.1 s (timeout reads 0 as no limit at all, a negative value
# or an empty one as an error that runs nothing), in fixed decimals (never 1e-05).
duration() { LC_ALL=C awk "BEGIN { s = ${1:-0}; printf \"%.2f\", (s < 0.1 ? 0.1 : s) }"; }
# nonnegative SECONDS: SECONDS, or 0 where the deadline has passed (what a message says is left).
nonnegative() { LC_ALL=C awk "BEGIN { s = ${1:-0}; printf \"%.2f\", (s < 0.005 ? 0 : s) }"; }
started=$(now) failures=0

# --- the kit, under its own deadline -------------------------------------------------------------
kit_t0=$(now) kit_result=""
kit_deadline=$(calc "$kit_t0 + $scale * ${budget[kit]}")
if [[ -f $kit ]]; then
  unpack_s=$(duration "$(calc "$kit_deadline - $(now) - 1.5")")
  if command -v xz >/dev/null; then
    timeout -k 1 "$unpack_s" tar -C "$work" -xJf "$kit" || { echo "check_gpu: cannot unpack $kit in time" >&2; exit 2; }
    kit_result="unpacked with xz"
  else  # an image without xz: Python's tarfile reads it
    timeout -k 1 "$unpack_s" "$py" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$kit" "$work" ||
      { echo "check_gpu: cannot unpack $kit in time" >&2; exit 2; }
    kit_result="unpacked with Python's tarfile"
  fi
  kit=$(find "$work" -mindepth 2 -maxdepth 2 -name env.sh -printf '%h\n' | head -1)
fi
kit=$(cd "$kit" && pwd)
[[ -f $kit/env.sh ]] || { echo "check_gpu: $kit has no env.sh: not a kit from scripts/gpu_kit.sh" >&2; exit 2; }
# PyTorch keeps this machine's library path; ringtrain's programs get the kit's (env.sh).
torch_py=(env "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" "$py")
# shellcheck source=/dev/null
source "$kit/env.sh"
cuda_from=${cuda_dirs:-"where the dynamic linker looks"}
kit_result="${kit_result:+$kit_result; }env.sh: CUDA's libraries from $cuda_from"
# The training tests read Fashion-MNIST where Debian installs it; lend them the kit's copy.
fmnist=/usr/share/datasets/fashion-mnist
if [[ ! -e $fmnist/train-images-idx3-ubyte.gz && ! -e $fmnist && -d $kit/data/fashion-mnist ]]; then
  if mkdir -p "$(dirname "$fmnist")" 2>/dev/null && ln -s "$kit/data/fashion-mnist" "$fmnist" 2>/dev/null; then
    lent_fmnist=$fmnist  # taken away again at the end
  else
    echo "check_gpu: cannot place Fashion-MNIST at $fmnist (not root?): its training tests will skip"
  fi
fi
kit_took=$(calc "$(now) - $kit_t0")
if LC_ALL=C awk "BEGIN { exit !($kit_took > $scale * ${budget[kit]}) }"; then
  kit_result="$kit_result; OVER ITS DEADLINE"; failures=$((failures + 1))
fi

# --- summary.md: rewritten whole whenever something is added -------------------------------------
# Its speed tables are check_gpu_speed.py's summary of speed.jsonl, made once after each change of
# it (read_answers), not again for each rewrite.
summary=$out/summary.md suites=$out/suites.log speed=$out/speed.jsonl speed_summary=$work/speed_summary.md
{
  echo "# ringtrain GPU check, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  sed 's/^/- kit: /' "$kit/VERSION" 2>/dev/null
  echo "- GPU: $(timeout 5 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || echo none)"
  echo "- scale of the deadlines: $scale${seconds:+; deadlines given: $seconds}${from:+; speed runs carried on from $from}"
  echo
  echo "| # | part | expected s | took s | result |"
  echo "|---|---|---|---|---|"
  echo "| 0 | kit | $(calc "$scale * ${budget[kit]}") | $kit_took | $kit_result |"
} >"$work/summary_head.md"
: >"$work/summary_rows.md"
: >"$work/summary_total.md"
write_summary() {
  if [[ -s $speed && ! -e $speed_summary ]]; then "$py" scripts/check_gpu_speed.py "$speed" summary >"$speed_summary" 2>&1; fi
  { cat "$work/summary_head.md" "$work/summary_rows.md" "$work/summary_total.md"
    [[ -s $speed ]] && cat "$speed_summary"
  } >"$summary.new" 2>&1
  mv "$summary.new" "$summary"
}
write_summary

# --- parts and their deadlines -------------------------------------------------------------------
part_no=0 launched=0
gpu_processes() {  # the GPU's compute processes as "pid, memory" joined by ";", "" if none
  command -v nvidia-smi >/dev/null || { echo "(no nvidia-smi)"; return; }
  timeout 5 nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>&1 | grep -v '^No running' | paste -sd';'
}
part_begin() {  # part_begin NAME: starts a part's clock; says which GPU processes are still alive
  local apps
  part=$1 part_no=$((part_no + 1)) part_t0=$(now) part_result="" part_bad=0
  part_deadline=$(calc "$part_t0 + $scale * ${budget[$part]}")
  echo "== part $part_no, $part: deadline $(calc "$scale * ${budget[$part]}") s"
  apps=$(gpu_processes)
  echo "== part $part_no, $part: GPU processes alive (pid, memory): ${apps:-none}"
  [[ -z $apps || $apps == "(no nvidia-smi)" ]] || note "GPU processes alive at its start: $apps"
}
left() { nonnegative "$(calc "$part_deadline - $(now)")"; }
# What a command may take: until 1.5 s before the part's deadline (it is then stopped, killed 1 s
# later if it must be, and whatever it left is killed 0.4 s on). Negative once that moment has
# passed: compared, never given to `timeout` (bounded gives it duration's).
allowed() { calc "$part_deadline - $(now) - 1.5"; }
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
  echo "| $part_no | $part | $(calc "$scale * ${budget[$part]}") | $took | $part_result |" >>"$work/summary_rows.md"
  write_summary
  echo "== part $part_no, $part: $part_result ($took s)"
}

# The processes whose environment holds RINGTRAIN_CHECK_RUN=TOKEN, one pid a line.
token_pids() {
  local f
  for f in $(grep -lzx "RINGTRAIN_CHECK_RUN=$1" /proc/[0-9]*/environ 2>/dev/null); do
    f=${f#/proc/}
    echo "${f%/environ}"
  done
}
# reap TOKEN LABEL: kills every process of TOKEN that a command stopped at its deadline left behind
# (mpirun's ranks, a PyTorch worker), and says so. One that timeout's signal reached may still be
# on its way out: only what is there 0.4 s later was left behind.
reap() {
  local token=$1 label=$2 pids=() tries
  for tries in 1 2 3 4 5; do
    mapfile -t pids < <(token_pids "$token")
    [[ ${#pids[@]} -gt 0 && $tries -lt 5 ]] || break
    sleep 0.1
  done
  [[ ${#pids[@]} -gt 0 ]] || return 0
  kill -KILL "${pids[@]}" 2>/dev/null
  note "$label: killed ${#pids[@]} process(es) it left running (${pids[*]})"
  echo "== $label: killed ${#pids[@]} process(es) it left running: ${pids[*]}"
}

# bounded LABEL LOG CMD...: CMD within allowed(), its output into LOG, then reaped; CMD's status
# (124 or 137: stopped at the deadline). Callers check that time is left first.
bounded() {
  local label=$1 log=$2 rc=0 token limit
  shift 2
  launched=$((launched + 1)) token="$$.$launched"
  # At least 0.1 s (duration): the deadline may pass between the caller's check and here. The
  # 1.5 s kept back covers the excess.
  limit=$(duration "$(allowed)")
  env RINGTRAIN_CHECK_RUN="$token" timeout -k 1 "$limit" "$@" >"$log" 2>&1 || rc=$?
  reap "$token" "$label"
  return "$rc"
}
time_is_left() { LC_ALL=C awk "BEGIN { exit !($(allowed) > 0) }"; }

# run LABEL CMD...: runs CMD under what is left of the part's deadline, its output into suites.log,
# and notes the verdict: a gtest run's counts and failed tests, or the exit status; a run cut off
# names the test it was in.
run() {
  local label=$1 rc=0 log=$work/run.log
  shift
  if ! time_is_left; then
    note "$label: not started, the part's time was spent"; part_bad=1; return 1
  fi
  echo "== $part: $label: $*" >>"$suites"
  bounded "$label" "$log" "$@" || rc=$?
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
# version_of LABEL CMD...: CMD's output into $work/version.log under what is left of the part's
# deadline (bounded), and its status; a command not started for lack of time (status 125) or
# stopped at the deadline says so, in versions.txt and in the part's verdict, which then does not
# claim what the command could not show.
version_of() {
  local label=$1 rc=0
  shift
  if ! time_is_left; then
    echo "($label: not started, the part's time was spent)" >"$work/version.log"
    note "$label: not started, the part's time was spent"; part_bad=1
    return 125
  fi
  bounded "$label" "$work/version.log" "$@" || rc=$?
  if [[ $rc == 124 || $rc == 137 ]]; then
    echo "($label: stopped at the part's deadline)" >>"$work/version.log"
    note "$label: TIMED OUT"; part_bad=1
  fi
  return "$rc"
}
versions() {
  local rc verify_rc=0
  {
    echo "# versions"
    cat "$kit/VERSION" 2>/dev/null
    rc=0; version_of nvidia-smi nvidia-smi || rc=$?
    if [[ $rc == 127 ]]; then echo "nvidia-smi: not found"; else head -n 12 "$work/version.log"; fi
    echo
    version_of "ringtrain info" ringtrain info
    head -n 4 "$work/version.log"
    echo
    echo "Fashion-MNIST for the training tests: $fmnist${lent_fmnist:+, lent from the kit until the check ends}$([[ -e $fmnist/train-images-idx3-ubyte.gz ]] || echo ', missing')"
    echo
    echo "# the kit's libraries, and the CUDA libraries this machine provides (cuBLAS, cuDNN, NCCL)"
    version_of "library check" bash scripts/gpu_kit.sh --verify "$kit" || verify_rc=$?
    cat "$work/version.log"
    echo
    version_of PyTorch "${torch_py[@]}" -c 'import torch, torchvision
print("PyTorch", torch.__version__, "torchvision", torchvision.__version__, "CUDA", torch.version.cuda, "cuDNN",
      torch.backends.cudnn.version(), "NCCL", ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "-")'
    tail -n 1 "$work/version.log"
  } >"$out/versions.txt" 2>&1
  # The libraries' verdict only where their check ran to its end (else its note says why not).
  if [[ $verify_rc != 124 && $verify_rc != 137 && $verify_rc != 125 ]]; then
    if grep -q "every library is in the kit" "$out/versions.txt"; then
      note "libraries complete"
    else
      note "LIBRARIES MISSING (versions.txt)"; part_bad=1
    fi
  fi
  cuda_line=$(grep -m1 '^  CUDA:' "$out/versions.txt" | sed 's/^ *//')
  [[ -n $cuda_line ]] && note "$cuda_line"
}

# --- 2-7. the suites -----------------------------------------------------------------------------
export GTEST_COLOR=no
ops() {
  run parity test_gpu_parity --gtest_filter='GpuParity.Linear*:GpuParity.ReluAdd*:GpuParity.Pooling*:GpuParity.Dropout*:GpuParity.SoftmaxCrossEntropyAndSgd:GpuParity.CudaGraph*:GpuParity.Conv2dFp32:GpuParity.Conv2dTf32:GpuParity.Conv2dWinograd*:GpuParity.BatchNorm*:GpuParity.AgreedReductions*:GpuParity.GroupBatchNorm*'
}

ops16() {
  run mixed_precision test_gpu_parity --gtest_filter='*GpuMixedPrecision.*-*Step*:*ShortTraining*:*GraphApi*:*WhicheverCudnnApi*'
}

# NCCL says why it fails to start (its topology probe reads /sys, which a sandbox may not have);
# every launch binds no rank (Open MPI binds by core or socket through hwloc, which reads /sys
# too). One rank goes through mpirun as well: the suite's tests need MPI's world.
ring() {
  local -x NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  run np1 bash scripts/mpi_launch.sh --testing --bind-to none -np 1 test_gpu_ring
  # PowerSGD's products on this GPU, per element: what the simulator's cluster files take as
  # [compute] powersgd_ns_per_element and powersgd_ns_per_rank. A few seconds, before the launches
  # of several ranks, whose four CUDA contexts on one GPU are the part's longest and least known.
  run powersgd_products powersgd_products --gpu
  run np3 bash scripts/mpi_launch.sh --testing --bind-to none -np 3 test_gpu_ring
  run np4 bash scripts/mpi_launch.sh --testing --bind-to none -np 4 test_gpu_ring
  gpus=$(timeout 5 nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if [[ ${gpus:-0} -ge 2 ]]; then
    run np2_nccl bash scripts/mpi_launch.sh --testing --bind-to none -np 2 test_gpu_ring
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
}

# The float32 steps first: an add's input gradient shares the add's buffer in ResNet-101's and
# Inception-v3's float32 backward; Inception-v3's, the slowest, last.
steps() {
  run model_steps test_gpu_parity --gtest_filter='GpuParity.ResNet101Step:GpuParity.Vgg16Step:*GpuMixedPrecision.ResNet101Step/bf16'
  run inception_v3_step test_gpu_parity --gtest_filter='GpuParity.InceptionV3Step'
}

# --- 8. training from a JPEG folder --------------------------------------------------------------
# SGD only (the trainer part trains LARS on the GPU), and evaluation at the training batch, so that
# its graph is planned with the training graph's shapes rather than at eval.batch's default of 500.
images() {
  local photos
  photos=$work/photos
  if run make_photos "${torch_py[@]}" bench/make_photo_tree.py --synthetic "$photos/train" --images 512 &&
    run make_val "${torch_py[@]}" bench/make_photo_tree.py --synthetic "$photos/val" --images 64; then
    run resnet50_sgd ringtrain train --config configs/resnet101.toml --set model.name=resnet50 \
      --set model.num_classes=10 --set 'data.mean=[0.485,0.456,0.406]' \
      --set 'data.std=[0.229,0.224,0.225]' --set data.source=imagefolder --set data.dir="$photos" --set train.epochs=1 \
      --set train.device=cuda --set train.precision=bf16 --set train.optimizer=sgd --set eval.batch=64 \
      --set checkpoint.dir="$work/run_sgd" --set log.progress=none &&
      note "$(grep -m1 -o 'train loss [0-9.na]*\|data wait [0-9.]*%' "$work/run.log" | paste -sd, | sed 's/,/, /g')"
  fi
}

# --- 9. speed ------------------------------------------------------------------------------------
# Every run is one of four kinds, each estimated on its own from the longest run of that kind so
# far (this check's, and --from's), before any from a prior (seconds on the GPU, times --scale): a
# run starts only where its estimate fits in what is left. The graph API's first estimate is a
# plain run's (it plans at least as much); a graph-API run stopped at the deadline still says, in
# speed.jsonl, how long it had planned.
declare -A prior=([torch]=20 [plain]=15 [replay]=15 [graph]=15) seen=()
kind_of() {  # kind_of GRAPH REPLAY: plain, replay or graph
  if [[ $1 != off ]]; then echo graph; elif [[ $2 == true ]]; then echo replay; else echo plain; fi
}
estimate() {
  local e=${seen[$1]:-$(calc "${prior[$1]} * $scale")}
  [[ $1 == graph && -z ${seen[graph]:-} && -n ${seen[plain]:-} ]] && e=${seen[plain]}
  echo "$e"
}
saw() { [[ -n ${seen[$1]:-} ]] && LC_ALL=C awk "BEGIN { exit !(${seen[$1]} >= $2) }" || seen[$1]=$2; }
may_start() {  # may_start SECONDS WHAT: whether a run (or a pair) estimated at SECONDS fits in what is left
  local e=$1
  shift
  if LC_ALL=C awk "BEGIN { exit !($(allowed) < $e) }"; then
    echo "== left for lack of time (about $e s needed, $(left) s left): $*"; skipped_runs=$((skipped_runs + 1)); return 1
  fi
}
speed_py() { "$py" scripts/check_gpu_speed.py "$speed" "$@"; }
# What the plan asks of speed.jsonl, read once after each change of it: asked one start of Python
# at a time, the fifty-odd questions of a plan whose time is spent took 1.2-1.9 s past the deadline.
# The same start of Python makes summary.md's speed tables again.
declare -A answers=()
read_answers() {
  local question answer
  answers=()
  while IFS=$'\t' read -r question answer; do answers[$question]=$answer; done < <(speed_py update "$speed_summary")
}
yes_to() { [[ ${answers["$*"]:-} == yes ]]; }  # yes_to QUESTION...: held, rated or failed
answer() { echo "${answers[$1]:-$2}"; }        # answer QUESTION DEFAULT: best-setting or faster-replay
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
# timed_run KIND WHAT FIELDS RATE CMD...: runs CMD and keeps its JSON line in speed.jsonl with its
# seconds (run_s) added; a run stopped at the deadline as a "stopped" line, a failed one as a
# "failed" line, both with their seconds. FIELDS: the run's "model", "precision", ... as JSON
# members; RATE: the sed that finds its rate for the console.
timed_run() {
  local kind=$1 what=$2 fields=$3 rate=$4 rc=0 t log=$work/bench.log
  shift 4
  t=$(now)
  bounded "$what" "$log" "$@" || rc=$?
  t=$(calc "$(now) - $t")
  saw "$kind" "$t"
  if [[ $rc == 0 ]] && grep -q '^{' "$log"; then
    grep '^{' "$log" | tail -1 | sed "s/}\$/, \"run_s\": $t}/" >>"$speed"
    echo "== $what: $(sed -n "$rate" "$log") img/s ($t s)"
  elif [[ $rc == 124 || $rc == 137 ]]; then
    echo "{\"kind\": \"stopped\", $fields, \"run_s\": $t}" >>"$speed"
    echo "== $what: stopped at the part's deadline after $t s"
    skipped_runs=$((skipped_runs + 1))
  else
    echo "{\"kind\": \"failed\", $fields, \"exit\": $rc, \"run_s\": $t}" >>"$speed"
    echo "== $what FAILED (exit $rc, $t s):"
    tail -n 8 "$log"
    speed_failures=$((speed_failures + 1))
  fi
  read_answers
  table
}
rt_bench() {  # rt_bench MODEL PRECISION GRAPH REPLAY [NEED]: one ringtrain bench run, unless held or out of time
  local model=$1 precision=$2 graph=$3 replay=$4 kind step what need
  kind=$(kind_of "$graph" "$replay") what="ringtrain $model $precision cudnn_graph=$graph cuda_graph=$replay"
  yes_to held bench "$model" "$precision" "$graph" "$replay" && return 0
  need=${5:-$(estimate "$kind")}
  may_start "$need" "$what" || return 0
  rt_bench_step "$model" "$precision" "$graph" "$replay"
  timed_run "$kind" "$what" \
    "$(printf '"run": "ringtrain", "model": "%s", "precision": "%s", "conv_algorithm": "winograd", "cudnn_graph": "%s", "cuda_graph": %s, "profiled": false' \
      "$model" "$precision" "$graph" "$replay")" \
    's/^{.*"median_images_per_s":\([0-9.]*\).*/\1/p' "${step[@]}" --set bench.windows=3
}
torch_bench() {  # torch_bench MODEL PRECISION: PyTorch's step in its best layout, unless held or out of time
  local model=$1 precision=$2 step
  yes_to held torch "$model" "$precision" && return 0
  may_start "$(estimate torch)" "PyTorch $model $precision" || return 0
  torch_step "$model" "$precision"
  timed_run torch "PyTorch $model $precision" \
    "$(printf '"run": "torch", "model": "%s", "precision": "%s"' "$model" "$precision")" \
    's/^{.*"images_per_s": \([0-9.]*\).*/\1/p' "${step[@]}" --windows 3
}
table() {  # speed_table.txt and summary.md's speed tables, after every run (and read_answers)
  { cat "$speed_summary"; echo; echo "## Every run"; echo
    PYTHON=$py bash bench/gpu_vs_pytorch.sh --table-only --results "$speed"; } >"$out/speed_table.txt" 2>&1
  write_summary
}
# plain_bf16_failed MODEL: whether MODEL's plain bf16 run failed; said, and counted, where it did.
plain_bf16_failed() {
  yes_to failed "$1" bf16 off false || return 1
  echo "== ringtrain $1 bf16: its plain run failed; its runs with replay and the graph API are not started"
  after_failure=$((${after_failure:-0} + 1))
}
# ratio MODEL PRECISION GRAPH REPLAY: a ratio's two runs, ringtrain's first. The pair starts only
# where both fit, and PyTorch's run only where ringtrain's gave a rate, so no time goes to half a
# ratio: a ringtrain that fails leaves it to the other models and precisions, and a fault in one
# path (16-bit NHWC, say) cannot spend the part without a ratio.
ratio() {
  local model=$1 precision=$2 graph=$3 replay=$4 need
  need=$(estimate "$(kind_of "$graph" "$replay")")
  yes_to held torch "$model" "$precision" || need=$(calc "$need + $(estimate torch)")
  rt_bench "$model" "$precision" "$graph" "$replay" "$need"
  if yes_to rated "$model" "$precision" "$graph" "$replay"; then
    torch_bench "$model" "$precision"
  elif yes_to failed "$model" "$precision" "$graph" "$replay"; then
    echo "== PyTorch $model $precision not started: ringtrain's run failed"
  fi
}
# The order: every model's bf16 ratio (ringtrain with the legacy cuDNN API, then PyTorch), then
# CUDA-graph replay, then cuDNN's graph API (where_faster, with replay where replay was faster),
# the first model (ResNet-101) first; a model whose plain bf16 run failed gets neither (they would
# fail alike). Then each other precision with each model's fastest bf16 setting beside PyTorch.
speed() {
  local precision model graph replay kind seconds runs
  : >>"$speed"
  skipped_runs=0 speed_failures=0 after_failure=""
  if [[ -s $work/from.jsonl ]]; then
    cat "$work/from.jsonl" >>"$speed"
    while read -r kind seconds; do saw "$kind" "$seconds"; done < <(speed_py seconds)
    echo "== carried on from $from: $(grep -c '^{' "$speed") runs; estimates: $(for k in torch plain replay graph; do echo -n "$k $(estimate $k) s; "; done)"
  fi
  read_answers
  for precision in $precisions; do
    if [[ $precision == bf16 ]]; then
      for model in $models; do ratio "$model" bf16 off false; done
      for model in $models; do plain_bf16_failed "$model" || rt_bench "$model" bf16 off true; done
      for model in $models; do
        plain_bf16_failed "$model" && continue
        replay=$(answer "faster-replay $model" false)
        rt_bench "$model" bf16 where_faster "$replay"
      done
    else
      for model in $models; do
        read -r graph replay <<<"$(answer "best-setting $model" "off false")"
        ratio "$model" "$precision" "$graph" "$replay"
      done
    fi
  done
  runs=$(grep -c '^{' "$speed" || true)
  note "$runs runs, $speed_failures failed, $skipped_runs left or stopped for lack of time${after_failure:+, $after_failure not started after a failed plain bf16 run}"
  [[ $speed_failures == 0 ]] || part_bad=1
}

# --- 10. profile of the worst ratio --------------------------------------------------------------
# Profiled with the legacy cuDNN API where the row's fastest run used the graph API: planning that
# again could take the part's whole time. PyTorch's profiler writes one table (ops by GPU time).
profile() {
  local model precision graph replay profile step
  read -r model precision graph replay < <(speed_py worst)
  if [[ -z ${model:-} ]]; then
    note "no ratio measured, nothing to profile"
  else
    note "$model $precision"
    profile=$out/profile.txt
    echo "# The worst ratio: $model $precision (cudnn_graph=$graph cuda_graph=$replay)" >"$profile"
    if [[ $graph != off ]]; then
      note "profiled with cudnn_graph=off (the row ran $graph)"
      echo "(profiled with cudnn_graph=off: the row's $graph would plan again)" >>"$profile"
      graph=off
    fi
    # Two windows of 5 steps: bench.windows is at least 2 (a window's spread needs two).
    rt_bench_step "$model" "$precision" "$graph" "$replay"
    if profile_fits "$(kind_of "$graph" "$replay")" "ringtrain's profile" &&
      run ringtrain_profile "${step[@]}" --set bench.windows=2 --set bench.steps_per_window=5 \
        --profile "$work/ringtrain.profile"; then
      { echo; echo "## ringtrain bench --profile (seconds per step)"; cat "$work/ringtrain.profile"; } >>"$profile"
    fi
    torch_step "$model" "$precision"
    if profile_fits torch "PyTorch's profile" &&
      run pytorch_profile "${step[@]}" --steps 5 --windows 1 --profile "$work/torch.profile"; then
      { echo; echo "## PyTorch's profiler"; cat "$work/torch.profile"; } >>"$profile"
    fi
  fi
}
# profile_fits KIND WHAT: whether a profiled run, estimated as the speed part's runs of KIND took,
# fits in what is left; noted where not (a run cut off at the deadline would give no table).
profile_fits() {
  local need
  need=$(estimate "$1")
  may_start "$need" "$2" >/dev/null && return 0
  note "$2 not started: about $need s needed, $(nonnegative "$(allowed)") s left"
  return 1
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
{ echo; echo "Total: $total s; $failures part(s) failed or ran out of time."; } >"$work/summary_total.md"
write_summary
[[ $failures == 0 ]]
