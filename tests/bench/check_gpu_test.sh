#!/usr/bin/env bash
# The GPU check (scripts/check_gpu.sh) without a GPU, so that the first run on a GPU is not the
# first run (tests/bench/gpu_kit_test.sh gathers the real kit and runs the check's suite parts
# from it):
# 1. a stand-in kit whose programs answer as the real ones do: every part runs in order within its
#    deadline, a suite that hangs is stopped at its part's deadline and the next part still runs, a
#    part whose time is spent says which command it stopped and which it did not start, never a
#    verdict they could not reach (the versions part's libraries), a failed test and a failed
#    ringtrain run are named, the speed part gives every model's bf16 ratio (ringtrain, then
#    PyTorch) before replay and before cuDNN's graph API, carries the fastest bf16 setting to tf32,
#    the worst ratio is profiled with the legacy API where its row used the graph API, the ring
#    part's launches bind no rank and let NCCL warn, every bench line the stand-in was given gets as
#    far as asking for a GPU in the real ringtrain, and the header's time table is the code's and
#    fits in 540 s;
# 2. the speed part with stand-ins that take as long as the GPU's runs are estimated to, and a
#    graph-API run that plans for longer than the part has left: all three bf16 ratios are still in
#    summary.md, the slow run is stopped at the deadline and recorded with its seconds, and the part
#    keeps its deadline; both profiles fit in theirs, and a PyTorch run too long for what is left
#    is not started; where every bf16 run fails, the part skips what would fail alike and gives
#    every tf32 ratio; then the narrow rerun exactly as docs/gpu.md gives it carries on from there
#    within its seconds;
# 3. a check killed from outside mid-run keeps what its finished parts wrote;
# 4. a launch stopped at its deadline leaves a process running: its part kills it, and each part
#    first lists the GPU processes alive;
# and no deadline the check computes from what is left of a part reaches `timeout` as a duration it
# cannot read.
#
# Note [Verdicts at any speed]: the stand-ins sleep a tenth (part 1's a fifth) of what the GPU's
# runs are estimated to take, but every run also costs the check's own bookkeeping (bash, awk and
# Python started a few times), which does not shrink with the scale and grows with a slow or busy
# machine: beside another test on 2 slow cores it took the time of the graph API's run. So part 1,
# whose speed part runs 23 stand-ins that sleep 0 s (under a deadline they cannot reach), measures
# that bookkeeping per run, and `margin` is 3 times it, in the check's seconds at a tenth. Every
# deadline that runs must fit in gets `margin` for each run, and a stand-in meant to outlast what is
# left is longer by as much. Where the machine got busier since, a speed part may still leave a run
# the test expects for lack of time: the test then measures the bookkeeping in that part itself (its
# time less its runs'), and where 3 times that is more than `margin`, widens `margin` and runs the
# part once more (a plan that left the run for any other reason leaves it again). A part may end
# past its deadline by 0.3 s and the larger of 3 times the bookkeeping per run and 80 starts of a
# process as timed just before and after its check (what the check does after a command stopped
# 1.5 s before the deadline; a command not stopped overruns by seconds more). So what is asserted is
# the plan's order and bookkeeping, never what happened to fit on this machine.
# usage: check_gpu_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1 build_dir=$2
work=$(mktemp -d)
trap '[[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"' EXIT
fail() { echo "check_gpu_test: $*" >&2; exit 1; }
real_python=/usr/bin/python3
script=$source_dir/scripts/check_gpu.sh

# --- the stand-in kit ----------------------------------------------------------------------------
kit=$work/kit
mkdir -p "$kit/bin" "$kit/lib" "$kit/mpi"
echo "commit stand-in" >"$kit/VERSION"
cat >"$kit/env.sh" <<'SH'
kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=$kit/bin:$PATH RINGTRAIN_MPI=openmpi RINGTRAIN_MPIEXEC=$kit/bin/mpirun
SH
# How long a stand-in run takes: STUB_TIMES ("torch=15 plain=12 replay=12 where_faster=100",
# seconds on the GPU) times STUB_SCALE; 0 for a kind not named.
cat >"$kit/bin/stub_seconds" <<'SH'
#!/usr/bin/env bash
for pair in ${STUB_TIMES:-}; do [[ ${pair%%=*} == "$1" ]] && awk "BEGIN { printf \"%.3f\n\", ${pair#*=} * ${STUB_SCALE:-1} }" && exit; done
echo 0
SH
# A gtest-like suite: every filter passes, but "GraphApi" hangs in its first test and the 16-bit
# ops' filter fails one (a filter's negative part, after "-", is not looked at). With
# STUB_ORPHAN, test_gpu_ring starts a process of its own session (one its launcher would lose),
# writes its pid to STUB_ORPHAN and hangs.
cat >"$kit/bin/suite" <<'SH'
#!/usr/bin/env bash
filter=""
for a in "$@"; do [[ $a == --gtest_filter=* ]] && filter=${a#*=}; done
echo "$(basename "$0") $filter${NCCL_DEBUG:+ NCCL_DEBUG=$NCCL_DEBUG}" >>"$STUB_CALLS"
if [[ ${filter%%-*} == *GraphApi* && ${STUB_HANG:-graph_api} == graph_api ]]; then
  echo "[ RUN      ] GpuParity.Conv2dFp32ThroughTheGraphApi"; exec sleep 600
fi
if [[ $(basename "$0") == test_gpu_training && ${STUB_HANG:-} == trainer ]]; then
  echo "[ RUN      ] GpuTraining.StepsReplayedFromACudaGraphTrainAsIssuedStepsDo/0"; exec sleep 600
fi
if [[ $(basename "$0") == test_gpu_ring && -n ${STUB_ORPHAN:-} ]]; then
  setsid sleep 300 </dev/null >/dev/null 2>&1 &
  echo $! >>"$STUB_ORPHAN"
  echo "[ RUN      ] DeviceRingTest.TrainersShardedSgdAndLarsOnTheGpuMatchTheCpu"; exec sleep 600
fi
echo "[ RUN      ] Stand.In"; echo "[       OK ] Stand.In (1 ms)"
if [[ ${filter%%-*} == "*GpuMixedPrecision.*" ]]; then
  echo "[ RUN      ] GpuMixedPrecision.Pooling/0"; echo "[  FAILED  ] GpuMixedPrecision.Pooling/0 (2 ms)"
  echo "[  PASSED  ] 1 test."; echo "[  FAILED  ] 1 test, listed below:"; echo "[  FAILED  ] GpuMixedPrecision.Pooling/0"
  exit 1
fi
echo "[  PASSED  ] 3 tests."
echo "[  SKIPPED ] 1 test, listed below:"
SH
chmod +x "$kit/bin/suite" "$kit/bin/stub_seconds"
for b in test_gpu_parity test_gpu_training test_gpu_ring; do ln -s suite "$kit/bin/$b"; done
cat >"$kit/bin/powersgd_products" <<'SH'
#!/usr/bin/env bash
echo "powersgd_products $*" >>"$STUB_CALLS"
printf '# powersgd_products: 4096 x 25088 on the GPU, median of 5 runs\n# k ns_per_element\n1 0.0200\n'
SH
chmod +x "$kit/bin/powersgd_products"
# mpirun: says it is Open MPI, records its arguments, and starts -np copies of the program.
cat >"$kit/bin/mpirun" <<'SH'
#!/usr/bin/env bash
[[ $1 == --version ]] && { echo "mpirun (Open MPI) 4.1.4"; exit 0; }
echo "mpirun $*" >>"$STUB_CALLS"
np=1
while [[ $# -gt 0 && $1 == -* ]]; do
  case "$1" in
    -np) np=$2; shift 2 ;;
    --oversubscribe | --allow-run-as-root) shift ;;
    --mca) shift 3 ;;
    *) shift 2 ;;
  esac
done
for ((r = 0; r < np; r++)); do "$@" & done
rc=0
for ((r = 0; r < np; r++)); do wait -n || rc=$?; done
exit "$rc"
SH
# nvidia-smi: one GPU; its compute processes are STUB_GPU_APPS's lines. With STUB_HANG=versions,
# nvidia-smi alone (the versions part's) hangs.
cat >"$kit/bin/nvidia-smi" <<'SH'
#!/usr/bin/env bash
case "$*" in
  *--query-compute-apps*) [[ -s ${STUB_GPU_APPS:-/nonexistent} ]] && cat "$STUB_GPU_APPS" || echo "No running processes found" ;;
  *--query-gpu*) echo "NVIDIA stand-in, 580.00, 81559 MiB" ;;
  -L) echo "GPU 0: NVIDIA stand-in (UUID: GPU-0)" ;;
  *) [[ ${STUB_HANG:-} == versions ]] && exec sleep 600
     echo "stand-in nvidia-smi" ;;
esac
SH
chmod +x "$kit/bin/mpirun" "$kit/bin/nvidia-smi"
# ringtrain: info, train (an epoch line) and bench (one JSON line at 100 img/s; VGG-16 in fp16
# fails; --profile writes a profile). A bench run, profiled or not, takes stub_seconds of its kind
# (plain, replay or where_faster), which is also its plan_s; every run at the precision STUB_FAIL
# names fails after it.
cat >"$kit/bin/ringtrain" <<'SH'
#!/usr/bin/env bash
[[ $1 == bench ]] && echo "$(printf '%q ' ringtrain "$@")" >>"$STUB_BENCH_LINES"
cmd=$1; shift
case "$cmd" in
  info) printf 'ringtrain (stand-in)\n  CPU backend: none\n  CUDA: CUDA runtime 13.0, cuDNN 9.19.0, driver 580\n  NCCL: 2.28.9\n'; exit 0 ;;
  train) echo "train $*" >>"$STUB_CALLS"; echo "epoch 1/1: train loss 2.3021 top-1 10.00%, data wait 1.5%"; exit 0 ;;
esac
model="" precision="" graph="" replay="" profile=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --config) model=$(basename "$2" .toml); shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    --set) case "$2" in
             train.precision=*) precision=${2#*=} ;;
             train.cudnn_graph=*) graph=${2#*=} ;;
             train.cuda_graph=*) replay=${2#*=} ;;
           esac; shift 2 ;;
    *) shift ;;
  esac
done
echo "bench $model $precision $graph $replay${profile:+ profile}" >>"$STUB_CALLS"
kind=plain
[[ $replay == true ]] && kind=replay
[[ $graph != off ]] && kind=$graph
plan=$(stub_seconds "$kind")
sleep "$plan"
if [[ $model == vgg16 && $precision == fp16 ]]; then echo "ringtrain: error: the stand-in refuses this one" >&2; exit 3; fi
if [[ $precision == "${STUB_FAIL:-}" ]]; then echo "ringtrain: error: a stand-in fault at $precision" >&2; exit 3; fi
[[ -n $profile ]] && printf 'model %s\nforward_s 0.01\nlayer conv1 0.002\n' "$model" >"$profile"
# where_faster is faster on resnet101 (bf16 picks it) and inception_v3, replay faster on vgg16.
rate=100
[[ $model == resnet101 && $graph == where_faster ]] && rate=120
[[ $model == inception_v3 && $graph == where_faster ]] && rate=104
[[ $model == vgg16 && $replay == true ]] && rate=110
# fp16 skipped one update for its loss scale.
fp16=""
[[ $precision == fp16 ]] && fp16=',"loss_scale":32768,"skipped_steps":1'
printf '{"kind":"bench","model":"%s","precision":"%s","conv_algorithm":"winograd","cudnn_graph":"%s","cuda_graph":%s,"cuda_graph_recordings":%s,"batch_per_rank":64,"plan_s":%s,"median_images_per_s":%s%s}\n' \
  "$model" "$precision" "$graph" "$replay" "$([[ $replay == true ]] && echo 1 || echo 0)" "$plan" "$rate" "$fp16"
SH
chmod +x "$kit/bin/ringtrain"
# python: PyTorch's step at 40 img/s (inception_v3 in bf16 at 200, the worst ratio) after
# stub_seconds torch, profiled or not, the photo tree (empty folders, or with STUB_LIB a real one),
# a -c program checked to compile; anything else (the script's own tables) goes to the real
# python3, given the libraries STUB_LIB names where the system's are hidden.
cat >"$work/python" <<SH
#!/usr/bin/env bash
case "\$1" in
  bench/torch_gpu_train.py)
    echo "torch \$2 \$5\$([[ \$* == *--profile* ]] && echo ' profile')" >>"\$STUB_CALLS"
    sleep "\$($kit/bin/stub_seconds torch)"
    rate=40; [[ \$2 == inception_v3 && \$5 == bf16 ]] && rate=200
    for ((i = 1; i <= \$#; i++)); do [[ \${!i} == --profile ]] && { j=\$((i + 1)); echo "stand-in profiler table" >"\${!j}"; }; done
    echo "{\"kind\": \"torch_gpu\", \"model\": \"\$2\", \"precision\": \"\$5\", \"images_per_s\": \$rate}"; exit 0 ;;
  bench/make_photo_tree.py) [[ -n \${STUB_LIB:-} ]] || { mkdir -p "\$3"; exit 0; } ;;
  -c) $real_python -c 'import sys; compile(sys.argv[1], "-c", "exec")' "\$2" && echo "PyTorch stand-in"; exit ;;
esac
exec env \${STUB_LIB:+LD_LIBRARY_PATH=\$STUB_LIB} $real_python "\$@"
SH
chmod +x "$work/python"
export PYTHON=$work/python STUB_CALLS=$work/calls STUB_BENCH_LINES=$work/bench_lines
calc() { awk "BEGIN { printf \"%.2f\", $* }"; }
tenths() { awk "BEGIN { printf \"%.1f\", $* }"; }  # as summary.md's speed tables give seconds
# bookkeeping OUT [CARRIED]: the check's own seconds per run in OUT's speed part (its time less its
# runs' seconds, over its runs; speed.jsonl's first CARRIED lines came from --from), or part 1's
# where that is more (Note [Verdicts at any speed]).
bookkeeping() {
  local took runs run_s
  took=$(awk -F'|' '$3 == " speed " { print $5 + 0 }' "$1/summary.md")
  [[ -n $took ]] || { echo "$per_run"; return; }
  read -r runs run_s < <(tail -n "+$((${2:-0} + 1))" "$1/speed.jsonl" | grep -o '"run_s": [0-9.]*' |
    awk '{ n++; s += $2 } END { print n + 0, s + 0 }')
  awk "BEGIN { b = ($took - $run_s) / ($runs > 0 ? $runs : 1); printf \"%.3f\", (b > $per_run ? b : $per_run) }"
}
# widen OUT [CARRIED]: `margin` for 3 times the bookkeeping per run of OUT's speed part, where that
# is more; else status 1.
widen() {
  local b wider
  b=$(bookkeeping "$@")
  wider=$(awk "BEGIN { printf \"%d\", 3 * $b / $at + 1 }")
  [[ $wider -gt $margin ]] || return 1
  echo "check_gpu_test: ${1##*/}'s speed part left a run for lack of time, its bookkeeping taking $b s per run: again, margin $wider s"
  margin=$wider
}
# process_s: the seconds this machine takes now to start and end a process (20 of them, timed).
process_s() {
  local t0
  t0=$(date +%s.%N)
  for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do awk 'BEGIN {}'; done
  awk -v t0="$t0" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.4f", (t1 - t0) / 20 }'
}
# checked OUT CMD...: CMD, a check writing into OUT, and its status; OUT.cost gets the larger of
# process_s just before and just after it, and CMD's own seconds.
checked() {
  local out=$1 before t0 rc=0
  shift
  before=$(process_s) t0=$(date +%s.%N)
  "$@" || rc=$?
  awk -v a="$before" -v b="$(process_s)" -v t0="$t0" -v t1="$(date +%s.%N)" \
    'BEGIN { printf "%.4f %.2f\n", (a > b ? a : b), t1 - t0 }' >"$out.cost"
  return "$rc"
}
# over OUT [CARRIED]: how long a part of OUT may take past its deadline: 0.3 s, and the larger of
# 3 times the bookkeeping per run and 80 process starts at the cost measured around the check (what
# the check does after a command stopped 1.5 s before the deadline: some 50 of them).
over() {
  local b
  b=$(bookkeeping "$@")
  awk -v b="$b" -v p="$(cut -d' ' -f1 "$1.cost")" 'BEGIN { o = (3 * b > 80 * p) ? 3 * b : 80 * p; printf "%.2f", 0.3 + o }'
}
# deadlines_held OUT [CARRIED]: each part's row in OUT's summary.md took at most its deadline, and
# `over`.
deadlines_held() {
  local over
  over=$(over "$@")
  awk -F'|' -v over="$over" '$2 ~ /^ [0-9]+ $/ && $5 > $4 + over { print "part" $3 "took" $5 "s, its deadline" $4; bad = 1 } END { exit bad }' "$1/summary.md" ||
    fail "a part overran its deadline by more than $over s: $(cat "$1/summary.md")"
}

# 1. Every part, scaled to a fifth: the graph-API suite hangs and is stopped at its deadline. The
# speed and profile parts, whose 23 and 2 stand-ins sleep 0 s, get deadlines they cannot reach:
# they end with their plans, and the speed part's seconds per run are the check's bookkeeping.
out=$work/out1
rc=0
checked "$out" timeout 300 bash "$script" --kit "$kit" --out "$out" --scale 0.2 --precisions "bf16 tf32 fp16" \
  --seconds "speed=1000 profile=200" >"$work/log1" 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "a failed part must make the exit status 1, got $rc: $(tail -n 20 "$work/log1")"
for f in summary.md versions.txt suites.log speed.jsonl speed_table.txt profile.txt check.log; do
  [[ -s $out/$f ]] || fail "$f is missing or empty"
done
[[ $(find "$out" -type f | wc -l) -le 8 ]] || fail "more than 8 result files: $(ls "$out")"
rows=$(grep -cE '^\| [0-9]+ \| ' "$out/summary.md")
[[ $rows == 11 ]] || fail "expected 11 rows in summary.md (the kit and 10 parts), got $rows: $(cat "$out/summary.md")"
read -r speed_took speed_runs < <(awk -F'|' '$3 == " speed " { split($6, w, " "); print $5, w[1] }' "$out/summary.md")
[[ ${speed_runs:-0} -ge 20 ]] || fail "the speed part ran ${speed_runs:-no} runs, expected 23: $(grep speed "$out/summary.md")"
per_run=$(awk "BEGIN { r = $speed_took / $speed_runs; printf \"%.3f\", (r < 0.05 ? 0.05 : r) }")
at=0.1  # the scale of the parts after part 1: half the sleeping, the same margin in seconds
margin=$(awk "BEGIN { printf \"%d\", 3 * $per_run / $at + 1 }")  # in the check's seconds at a tenth
echo "check_gpu_test: the check's bookkeeping took $per_run s per run: margin $margin s at a tenth"
deadlines_held "$out"
grep -q '^| 0 | kit | 3.00 | [0-9.]* | env.sh: CUDA' "$out/summary.md" || fail "kit row: $(cat "$out/summary.md")"
grep -q '^| 1 | versions | .* | libraries complete; CUDA: CUDA runtime 13.0' "$out/summary.md" || fail "versions row: $(cat "$out/summary.md")"
grep -q '^| 3 | ops16 | .*mixed_precision: FAILED (exit 1): GpuMixedPrecision.Pooling/0; 1 passed' "$out/summary.md" ||
  fail "the failed test is not named: $(grep ops16 "$out/summary.md")"
grep -q '^| 6 | graph_api | .*graph_api: TIMED OUT in GpuParity.Conv2dFp32ThroughTheGraphApi' "$out/summary.md" ||
  fail "the hung suite is not named: $(grep graph_api "$out/summary.md")"
took=$(awk -F'|' '$3 ~ /graph_api/ {print $5}' "$out/summary.md")
awk "BEGIN { exit !($took >= 3.4 && $took <= 5 + $(over "$out")) }" || fail "the hung part took $took s; its deadline was 5 s, its suite stopped at 3.5 s"
grep -q '^| 7 | steps | .*model_steps: 3 passed, 1 skipped; inception_v3_step: 3 passed, 1 skipped' "$out/summary.md" ||
  fail "the steps part did not run after the hung one: $(grep steps "$out/summary.md")"
grep -q '^test_gpu_parity GpuParity.ResNet101Step:GpuParity.Vgg16Step:\*GpuMixedPrecision.ResNet101Step/bf16$' "$work/calls" &&
  grep -q '^test_gpu_parity GpuParity.InceptionV3Step$' "$work/calls" || fail "the float32 model steps are not run: $(cat "$work/calls")"
grep -q '^| 8 | images | .*train loss 2.3021, data wait 1.5%' "$out/summary.md" || fail "images row: $(grep images "$out/summary.md")"
[[ $(grep -c '^train ' "$work/calls") == 1 ]] && grep -q "train.optimizer=sgd .*eval.batch=64" "$work/calls" ||
  fail "images: one SGD training evaluated at the training batch expected: $(grep '^train' "$work/calls")"
grep -q '^| 2 | ops | .*parity: 3 passed, 1 skipped' "$out/summary.md" || fail "ops row: $(grep ops "$out/summary.md")"
# The ring part: NCCL warns; every launch (1, 3 and 4 ranks) goes through mpirun and binds no rank.
[[ $(grep -c '^test_gpu_ring  NCCL_DEBUG=WARN$' "$work/calls") == 8 ]] || fail "the ring's runs (1 + 3 + 4 ranks) without NCCL_DEBUG=WARN: $(grep test_gpu_ring "$work/calls")"
for np in 1 3 4; do
  grep -q "^mpirun .*--bind-to none -np $np test_gpu_ring\$" "$work/calls" ||
    fail "the ring's launch of $np ranks is missing or binds ranks: $(grep mpirun "$work/calls")"
done
grep -q '^powersgd_products --gpu$' "$work/calls" || fail "the ring part did not time PowerSGD's products on the GPU"
ring_order=$(grep -E '^(powersgd_products|mpirun .*-np [134] test_gpu_ring)' "$work/calls" | sed 's/^mpirun .*-np \([134]\).*/np\1/;s/ .*//')
[[ $ring_order == $'np1\npowersgd_products\nnp3\nnp4' ]] ||
  fail "PowerSGD's products are not timed before the launches of 3 and 4 ranks: $ring_order"
# The speed part: every model's bf16 ratio first (ringtrain, then PyTorch), then replay, then the
# graph API (with replay where replay was faster), then tf32 with each model's fastest bf16 setting;
# PyTorch's VGG-16 fp16 run is not started after ringtrain's failed.
speed_plan="bench resnet101 bf16 off false
torch resnet101 bf16
bench vgg16 bf16 off false
torch vgg16 bf16
bench inception_v3 bf16 off false
torch inception_v3 bf16
bench resnet101 bf16 off true
bench vgg16 bf16 off true
bench inception_v3 bf16 off true
bench resnet101 bf16 where_faster false
bench vgg16 bf16 where_faster true
bench inception_v3 bf16 where_faster false
bench resnet101 tf32 where_faster false
torch resnet101 tf32
bench vgg16 tf32 off true
torch vgg16 tf32"
expected_calls=$speed_plan
got=$(grep -E '^(bench|torch) ' "$work/calls" | head -n 16)
[[ $got == "$expected_calls" ]] || fail "the speed part ran, in order:
$got
expected:
$expected_calls"
grep -q '"kind":"failed".*"model":"vgg16","precision":"fp16"\|"kind": "failed", "run": "ringtrain", "model": "vgg16", "precision": "fp16"' "$out/speed.jsonl" ||
  fail "the failed run is not recorded: $(grep failed "$out/speed.jsonl")"
grep -q '^bench vgg16 fp16 ' "$work/calls" && ! grep -q '^torch vgg16 fp16' "$work/calls" ||
  fail "PyTorch's VGG-16 fp16 run ran after ringtrain's failed, or neither ran: $(grep fp16 "$work/calls")"
grep -q '"run_s": [0-9.]*}$' "$out/speed.jsonl" || fail "speed.jsonl lacks the runs' seconds: $(head -n 2 "$out/speed.jsonl")"
grep -q '^| resnet101 | bf16 | where_faster | false | 120.0 | 40.0 | 3.00 | 0.0 |$' "$out/summary.md" || fail "summary's speed table: $(cat "$out/summary.md")"
grep -q '^| inception_v3 | bf16 | where_faster | false | 104.0 | 200.0 | 0.52 | ' "$out/summary.md" || fail "inception_v3's ratio: $(cat "$out/summary.md")"
grep -q "^## cuDNN's graph API" "$out/summary.md" && grep -q '^| vgg16 | bf16 | where_faster | true | 110.0 | 0.0 | 0.0 | ' "$out/summary.md" ||
  fail "summary.md does not list the graph API's runs with their planning: $(cat "$out/summary.md")"
[[ $(grep -c ' 2.50$' "$out/speed_table.txt") -ge 3 ]] || fail "speed_table.txt: $(cat "$out/speed_table.txt")"
# A row whose run skipped an update for fp16's loss scale is named under the ratios.
grep -q '^Steps skipped or recorded again for a new loss scale, maybe inside a timed window: resnet101 fp16 (1 skipped, recorded 0 times); inception_v3 fp16 (1 skipped, recorded 0 times)$' \
  "$out/summary.md" || fail "the fp16 rows with a skipped step are not named: $(cat "$out/summary.md")"
# The profile: the worst ratio (Inception-v3 bf16, 104 / 200), both sides, with the legacy API
# (its fastest run used the graph API).
grep -q '^| 10 | profile | .* | inception_v3 bf16; profiled with cudnn_graph=off (the row ran where_faster); ringtrain_profile: passed; pytorch_profile: passed |' "$out/summary.md" ||
  fail "profile row: $(grep profile "$out/summary.md")"
grep -q '^bench inception_v3 bf16 off false profile$' "$work/calls" && grep -q '^torch inception_v3 bf16 profile$' "$work/calls" ||
  fail "the profiles did not run on the worst ratio with the legacy API: $(tail -n 3 "$work/calls")"
grep -q 'layer conv1' "$out/profile.txt" && grep -q 'stand-in profiler table' "$out/profile.txt" || fail "profile.txt: $(cat "$out/profile.txt")"
# Every ringtrain bench line the speed and profile parts gave the stand-in is one the real ringtrain
# accepts: run without a GPU, each gets as far as asking for one, past the config's checks.
bench_lines=$(sort -u "$work/bench_lines")
while read -r line; do
  eval "set -- $line"
  shift
  rc=0
  (cd "$source_dir" && CUDA_VISIBLE_DEVICES="" timeout 60 "$build_dir/ringtrain" "$@") >"$work/replay.log" 2>&1 || rc=$?
  [[ $rc != 0 ]] && grep -qE '^ringtrain: error: (device = "cuda" but|.*built without CUDA)' "$work/replay.log" ||
    fail "the real ringtrain does not reach the GPU with the check's line (exit $rc): $line
$(tail -n 3 "$work/replay.log")"
done <<<"$bench_lines"
grep -q -- '--profile' <<<"$bench_lines" || fail "no profiled bench line was replayed: $bench_lines"
echo "check_gpu_test: $(wc -l <<<"$bench_lines") bench lines of the check reach the GPU in the real ringtrain"

# The header's time table is the code's, and adds up to at most 540 s: 60 s of a 600-s limit left.
total=0
while read -r name seconds; do
  grep -qE "^# \| [0-9]+ +\| $name +\| $seconds +\| (estimated|measured) +\|" "$script" || fail "the header's table does not give $name $seconds s"
  total=$((total + seconds))
done < <(sed -n 's/^declare -A budget=(//p' "$script" | tr -d ')' | tr ' ' '\n' | sed 's/\[\(.*\)\]=\(.*\)/\1 \2/')
[[ $total -le 540 ]] || fail "the kit's and the parts' deadlines add up to $total s, over 540"
grep -qE "^# \|   \| total +\| $total +\|" "$script" || fail "the header's total is not $total"
echo "check_gpu_test: the deadlines add up to $total s"

# 1b. The versions part's nvidia-smi hangs through the part's deadline (5 s at a fifth): it is
# stopped, the commands after it are not started, each says so, the libraries are not called
# missing, and the next part runs.
spent="the part's time was spent"
rc=0
STUB_HANG=versions checked "$work/out1v" timeout 120 bash "$script" --kit "$kit" --out "$work/out1v" --parts "versions ops" --scale 0.2 \
  >"$work/log1v" 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "a part out of time must make the exit status 1, got $rc: $(tail -n 20 "$work/log1v")"
grep -qE "^\| 1 \| versions \| 5.00 \| [0-9.]+ \| nvidia-smi: TIMED OUT; ringtrain info: not started, $spent; library check: not started, $spent; PyTorch: not started, $spent \|\$" \
  "$work/out1v/summary.md" || fail "versions row, out of time: $(cat "$work/out1v/summary.md")"
grep -q "^(library check: not started, $spent)\$" "$work/out1v/versions.txt" || fail "versions.txt, out of time: $(cat "$work/out1v/versions.txt")"
grep -q '^| 2 | ops | .* | parity: 3 passed, 1 skipped |$' "$work/out1v/summary.md" ||
  fail "the ops part did not run after the versions part ran out of time: $(cat "$work/out1v/summary.md")"
deadlines_held "$work/out1v"

# 2. The speed part as the GPU's runs are estimated to take (PyTorch 15 s, ringtrain 12 s), with a
# graph-API run that plans for longer than is left (100 s), at a tenth of the time: every bf16
# ratio is in summary.md. The part's deadline is the table's and `margin` for each of the 10 runs
# it is to start, the graph-API run plans for as much longer (Note [Verdicts at any speed]).
out=$work/out2
speed_and_profile() {
  : >"$work/calls"
  speed_s=$((165 + 10 * margin)) profile_s=$((45 + 3 * margin))
  STUB_TIMES="torch=15 plain=12 replay=12 where_faster=$((100 + 10 * margin))" STUB_SCALE=$at checked "$out" bash "$script" --kit "$kit" \
    --out "$out" --parts "speed profile" --scale $at --seconds "speed=$speed_s profile=$profile_s" >"$work/log2" 2>&1 || true
}
speed_and_profile
if grep -q '^== left for lack of time .*: ringtrain resnet101 bf16 cudnn_graph=where_faster' "$out/check.log" && widen "$out"; then
  speed_and_profile
fi
for model in resnet101 vgg16 inception_v3; do
  grep -qE "^\| $model \| bf16 \| off \| (true|false) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| " "$out/summary.md" ||
    fail "no bf16 ratio for $model in summary.md: $(cat "$out/summary.md")"
done
# Part 1's plan up to the graph API's first run.
expected_calls=$(head -n 10 <<<"$speed_plan")
got=$(grep -E '^(bench|torch) ' "$work/calls" | grep -v ' profile$')
[[ $got == "$expected_calls" ]] || fail "the graph API never started, or not after every bf16 ratio and replay; the speed part ran, in order:
$got
expected:
$expected_calls"
grep -q '"kind": "stopped", "run": "ringtrain", "model": "resnet101", "precision": "bf16", .*"cudnn_graph": "where_faster", .*"run_s": [0-9.]*}' "$out/speed.jsonl" ||
  fail "the graph-API run stopped at the deadline is not recorded with its seconds: $(cat "$out/speed.jsonl")"
grep -q "^| resnet101 | bf16 | where_faster | false | stopped at the deadline | more than [0-9.]* | $(tenths "$at * 12") | " "$out/summary.md" ||
  fail "summary.md does not say how long the stopped graph-API run planned: $(cat "$out/summary.md")"
grep -qE "^\| 1 \| speed \| $(calc "$at * $speed_s") \| [0-9.]+ \| 10 runs, 0 failed, [1-9][0-9]* left or stopped for lack of time" "$out/summary.md" ||
  fail "speed row: $(cat "$out/summary.md")"
# Both profiles, each as long as a run of its kind, fit in the profile part's time.
grep -qE "^\| 2 \| profile \| $(calc "$at * $profile_s") \| [0-9.]+ \| .*; ringtrain_profile: passed; pytorch_profile: passed \|\$" "$out/summary.md" ||
  fail "profile row: $(grep profile "$out/summary.md")"
deadlines_held "$out"
# Where PyTorch's run is longer than what the profile part has left after ringtrain's (but not than
# the part's whole time), it is not started, and summary.md says so, rather than stopped half-way
# at the deadline. The estimates are the seconds of the runs in a speed.jsonl the check carries on
# from (it repeats none of them): ringtrain's profile is a plain run, as long as its stand-in;
# PyTorch's estimate is half that run and `margin` short of the part's time, so it would fit in the
# part alone, but not in what ringtrain's run leaves.
plain_s=$((12 + 4 * margin)) profile_s=$((45 + 7 * margin))
plain_run=$(calc "$at * $plain_s") torch_run=$(calc "$at * ($profile_s - $plain_s / 2 - $margin) - 1.5")
mkdir -p "$work/from2p"
for setting in '"off","cuda_graph":false' '"off","cuda_graph":true' '"where_faster","cuda_graph":false'; do
  echo "{\"kind\":\"bench\",\"model\":\"resnet101\",\"precision\":\"bf16\",\"conv_algorithm\":\"winograd\",\"cudnn_graph\":$setting,\"batch_per_rank\":64,\"plan_s\":$plain_run,\"median_images_per_s\":100, \"run_s\": $plain_run}"
done >"$work/from2p/speed.jsonl"
echo "{\"kind\": \"torch_gpu\", \"model\": \"resnet101\", \"precision\": \"bf16\", \"images_per_s\": 40, \"run_s\": $torch_run}" >>"$work/from2p/speed.jsonl"
: >"$work/calls"
STUB_TIMES="plain=$plain_s" STUB_SCALE=$at checked "$work/out2p" bash "$script" --kit "$kit" --out "$work/out2p" --from "$work/from2p" \
  --parts "speed profile" --models resnet101 --precisions bf16 --scale $at --seconds "profile=$profile_s" >"$work/log2p" 2>&1 || true
grep -qE "^\| 2 \| profile \| $(calc "$at * $profile_s") \| [0-9.]+ \| resnet101 bf16; ringtrain_profile: passed; PyTorch's profile not started: about $torch_run s needed, [0-9.]+ s left \|\$" \
  "$work/out2p/summary.md" || fail "profile row, PyTorch's run too long: $(grep profile "$work/out2p/summary.md")"
[[ $(grep -E '^(bench|torch) ' "$work/calls") == "bench resnet101 bf16 off false profile" ]] ||
  fail "expected ringtrain's profile alone, no run repeated: $(cat "$work/calls")"
deadlines_held "$work/out2p" 4
# A fault in one path: every ringtrain run at bf16 fails, each after planning as long as a plain
# run. Its PyTorch runs, its replay and graph-API runs are not started, and the part's time goes
# to tf32, whose three ratios are in summary.md (running them all, as before, left none).
bf16_failing() {
  : >"$work/calls"
  speed_s=$((165 + 9 * margin))
  STUB_FAIL=bf16 STUB_TIMES="torch=15 plain=12 replay=12 where_faster=12" STUB_SCALE=$at checked "$work/out2f" bash "$script" --kit "$kit" \
    --out "$work/out2f" --parts speed --scale $at --seconds "speed=$speed_s" --precisions "bf16 tf32" >"$work/log2f" 2>&1 || true
}
bf16_failing
if grep -q '^== left for lack of time' "$work/out2f/check.log" && widen "$work/out2f"; then bf16_failing; fi
expected_calls="bench resnet101 bf16 off false
bench vgg16 bf16 off false
bench inception_v3 bf16 off false
bench resnet101 tf32 off false
torch resnet101 tf32
bench vgg16 tf32 off false
torch vgg16 tf32
bench inception_v3 tf32 off false
torch inception_v3 tf32"
got=$(grep -E '^(bench|torch) ' "$work/calls")
[[ $got == "$expected_calls" ]] || fail "with every bf16 run failing, the speed part ran, in order:
$got
expected:
$expected_calls"
for model in resnet101 vgg16 inception_v3; do
  grep -qE "^\| $model \| tf32 \| off \| false \| 100.0 \| 40.0 \| 2.50 \| " "$work/out2f/summary.md" ||
    fail "no tf32 ratio for $model after the bf16 runs failed: $(cat "$work/out2f/summary.md")"
done
grep -q "^| 1 | speed | $(calc "$at * $speed_s") | [0-9.]* | 9 runs, 3 failed, 0 left or stopped for lack of time, 6 not started after a failed plain bf16 run" \
  "$work/out2f/summary.md" || fail "speed row after the bf16 faults: $(grep speed "$work/out2f/summary.md")"
deadlines_held "$work/out2f"

# The rerun docs/gpu.md gives, word for word but for the kit's and the folders' places, with a
# graph-API run of 60 s: ResNet-101's where_faster gets its time and a rate, planned in 6 s. Its
# estimate is the graph-API run stopped above, which ran for what that part had left; where that
# (or the run's 60 s), the 1.5 s kept back and 3 times `margin` are more than the rerun's deadline
# for the speed part, that deadline is widened to hold them (Note [Verdicts at any speed]), and the
# rerun must end within the deadlines it ran under.
rerun=$(sed -n 's/^\(bash scripts\/check_gpu.sh .*--from .*\)$/\1/p' "$source_dir/docs/gpu.md")
[[ $(wc -l <<<"$rerun") == 1 && -n $rerun ]] || fail "docs/gpu.md does not give one rerun command with --from: '$rerun'"
seconds=$(sed -n 's/.*--seconds "\([a-z_]*=[0-9]*\( [a-z_]*=[0-9]*\)*\)".*/\1/p' <<<"$rerun")
sum=$(sed -n 's/^declare -A budget=(\[kit\]=\([0-9]*\).*/\1/p' "$script")
for pair in $seconds; do sum=$((sum + ${pair#*=})); done
rerun_s=$(sed -n 's/.*[Tt]he rerun below takes \([0-9]*\) s by its deadlines.*/\1/p' "$source_dir/docs/gpu.md" | head -1)
[[ $rerun_s == "$sum" ]] || fail "docs/gpu.md gives the rerun ${rerun_s:-no} seconds; its deadlines add up to $sum"
docs_speed=$(sed -n 's/.*speed=\([0-9]*\).*/\1/p' <<<"$seconds")
[[ -n $docs_speed ]] || fail "docs/gpu.md's rerun gives the speed part no deadline: $rerun"
stopped_s=$(sed -n 's/^{"kind": "stopped", "run": "ringtrain", "model": "resnet101", .*"run_s": \([0-9.]*\)}$/\1/p' "$out/speed.jsonl" | head -1)
carried=$(grep -c '^{' "$out/speed.jsonl")
rerun=${rerun//ringtrain-gpu-kit.tar.xz/$kit}
rerun=${rerun//--out gpu-check-rerun/--out $work/out2r}
rerun=${rerun//--from gpu-check/--from $out}
rerun=${rerun/bash scripts\/check_gpu.sh/bash $script}
rerun_as_documented() {
  speed_s=$(awk "BEGIN { g = $stopped_s / $at; n = 1.5 / $at + (g > 60 ? g : 60) + 3 * $margin + 1; printf \"%d\", (n > $docs_speed ? n : $docs_speed) }")
  : >"$work/calls"
  rc=0
  STUB_TIMES="torch=15 plain=12 replay=12 where_faster=60" STUB_SCALE=$at checked "$work/out2r" \
    eval "${rerun/speed=$docs_speed/speed=$speed_s} --scale $at" >"$work/log2r" 2>&1 || rc=$?
  took=$(cut -d' ' -f2 "$work/out2r.cost")
}
rerun_as_documented
if grep -q "^== left for lack of time .*: ringtrain resnet101 bf16 cudnn_graph=where_faster\|^== ringtrain resnet101 bf16 cudnn_graph=where_faster cuda_graph=false: stopped" \
  "$work/out2r/check.log" && widen "$work/out2r" "$carried"; then
  rerun_as_documented
fi
[[ $rc == 0 ]] || fail "the rerun exited $rc: $(tail -n 20 "$work/log2r")"
sum=$((sum + speed_s - docs_speed))
over=$(calc "1.7 + $(over "$work/out2r" "$carried")")
awk "BEGIN { exit !($took <= $at * $sum + $over) }" || fail "the rerun took $took s, over its $sum s at a tenth (and $over s to start and of bookkeeping)"
if grep -qE '^torch [a-z0-9_]+ bf16$|^bench [a-z0-9_]+ bf16 off ' "$work/calls"; then
  fail "the rerun ran again what the first run held: $(cat "$work/calls")"
fi
[[ $(grep -m1 -E '^(bench|torch) ' "$work/calls") == "bench resnet101 bf16 where_faster false" ]] ||
  fail "the rerun did not carry on with the graph API: $(cat "$work/calls")"
grep -q "^| resnet101 | bf16 | where_faster | false | 120.0 | 40.0 | 3.00 | $(tenths "$at * 60") |\$" "$work/out2r/summary.md" ||
  fail "the rerun's summary.md: $(cat "$work/out2r/summary.md")"
deadlines_held "$work/out2r" "$carried"

# 3. Killed from outside while the trainer part hangs: the parts before it are kept. (The wait ends
# as the trainer part starts; its bound, the earlier parts' deadlines, is reached only by a fault.)
out=$work/out3
STUB_HANG=trainer TMPDIR=$work setsid bash "$script" --kit "$kit" --out "$out" --parts "versions ops ring trainer" \
  >"$work/log3" 2>&1 &
pid=$!
for _ in $(seq 1500); do grep -q "== part 4, trainer" "$out/check.log" 2>/dev/null && break; sleep 0.1; done
kill -KILL -- -"$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
[[ $(grep -cE '^\| [0-9]+ \| ' "$out/summary.md") == 4 ]] || fail "a check cut off lost its finished parts: $(cat "$out/summary.md")"
grep -q "== ring: np3" "$out/suites.log" || fail "suites.log lost the ring's output"

# 4. A launch that leaves a process of its own session running when it is stopped at the deadline:
# the ring part kills it; and the part's first line lists the GPU processes alive. (On a busy
# machine a process of the launch may take longer than the check waits to end on timeout's signal,
# and be killed and counted with it.)
: >"$work/orphans"
echo "4242, 1200 MiB" >"$work/gpu_apps"
STUB_ORPHAN=$work/orphans STUB_GPU_APPS=$work/gpu_apps checked "$work/out4" bash "$script" --kit "$kit" --out "$work/out4" --parts ring \
  --scale $at --seconds "ring=$((45 + 2 * margin))" >"$work/log4" 2>&1 || true
orphan=$(head -n 1 "$work/orphans")
[[ -n $orphan ]] || fail "the stand-in left no process: $(cat "$work/log4")"
sleep 0.2
if [[ -e /proc/$orphan ]] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$orphan/stat"; then  # gone, or a zombie
  kill -KILL "$orphan"; fail "the process np1 left behind ($orphan) is still running"
fi
grep -qE "^\| 1 \| ring \| .*GPU processes alive at its start: 4242, 1200 MiB; np1: killed [0-9]+ process\(es\) it left running \(([0-9]+ )*$orphan( [0-9]+)*\); np1: TIMED OUT" \
  "$work/out4/summary.md" || fail "ring row: $(cat "$work/out4/summary.md")"
grep -q '^== part 1, ring: GPU processes alive (pid, memory): 4242, 1200 MiB$' "$work/out4/check.log" || fail "no GPU process line: $(cat "$work/out4/check.log")"
deadlines_held "$work/out4"

# No deadline computed from what was left of a part reached timeout as a duration it cannot read.
if grep -l "Try 'timeout --help'\|invalid time interval" "$work"/out*/check.log "$work"/out*/versions.txt 2>/dev/null; then
  fail "timeout was given a duration it cannot read (the files above)"
fi
echo "check_gpu_test: passed"
