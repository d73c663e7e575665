#!/usr/bin/env bash
# The GPU check (scripts/check_gpu.sh) and its kit (scripts/gpu_kit.sh) without a GPU, so that the
# first run on a GPU is not the first run:
# 1. a stand-in kit whose programs answer as the real ones do: every part runs in order, a suite
#    that hangs is stopped at its part's deadline and the next part still runs, a failed test and a
#    failed ringtrain run are named, the speed table's ratios are the stand-ins' (100 / 40 = 2.50),
#    the fastest bf16 setting is carried to tf32, the worst ratio is profiled, and the header's time
#    table is the code's and fits in 8 minutes;
# 2. the same with the speed part's deadline too short: runs are left, and said to be;
# 3. a check killed from outside mid-run keeps what its finished parts wrote;
# 4. the real kit, gathered from this build tree: under 48 MiB, its library closure complete, and
#    (as root) its binaries and its relocated Open MPI run with the system's copies of every carried
#    library and of Open MPI hidden, as on a machine that has none of them.
# usage: check_gpu_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1 build_dir=$2
work=$(mktemp -d)
trap '[[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"' EXIT
fail() { echo "check_gpu_test: $*" >&2; exit 1; }
real_python=/usr/bin/python3

# --- the stand-in kit ----------------------------------------------------------------------------
kit=$work/kit
mkdir -p "$kit/bin" "$kit/lib" "$kit/mpi"
echo "commit stand-in" >"$kit/VERSION"
cat >"$kit/env.sh" <<'SH'
kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=$kit/bin:$PATH
SH
# A gtest-like suite: every filter passes, but "GraphApi" hangs in its first test and
# "GpuMixedPrecision" fails one (a filter's negative part, after "-", is not looked at).
cat >"$kit/bin/suite" <<'SH'
#!/usr/bin/env bash
filter=""
for a in "$@"; do [[ $a == --gtest_filter=* ]] && filter=${a#*=}; done
echo "$(basename "$0") $filter" >>"$STUB_CALLS"
if [[ ${filter%%-*} == *GraphApi* && ${STUB_HANG:-graph_api} == graph_api ]]; then
  echo "[ RUN      ] GpuParity.Conv2dFp32ThroughTheGraphApi"; exec sleep 600
fi
if [[ $(basename "$0") == test_gpu_training && ${STUB_HANG:-} == trainer ]]; then
  echo "[ RUN      ] GpuTraining.StepsReplayedFromACudaGraphTrainAsIssuedStepsDo/0"; exec sleep 600
fi
echo "[ RUN      ] Stand.In"; echo "[       OK ] Stand.In (1 ms)"
if [[ ${filter%%-*} == *GpuMixedPrecision* ]]; then
  echo "[ RUN      ] GpuMixedPrecision.Pooling/0"; echo "[  FAILED  ] GpuMixedPrecision.Pooling/0 (2 ms)"
  echo "[  PASSED  ] 1 test."; echo "[  FAILED  ] 1 test, listed below:"; echo "[  FAILED  ] GpuMixedPrecision.Pooling/0"
  exit 1
fi
echo "[  PASSED  ] 3 tests."
echo "[  SKIPPED ] 1 test, listed below:"
SH
chmod +x "$kit/bin/suite"
for b in test_gpu_parity test_gpu_training test_gpu_ring; do ln -s suite "$kit/bin/$b"; done
# ringtrain: info, train (an epoch line) and bench (one JSON line at 100 img/s; VGG-16 in fp16
# fails; --profile writes a profile).
cat >"$kit/bin/ringtrain" <<'SH'
#!/usr/bin/env bash
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
sleep "${STUB_SLEEP:-0}"
if [[ $model == vgg16 && $precision == fp16 ]]; then echo "ringtrain: error: the stand-in refuses this one" >&2; exit 3; fi
[[ -n $profile ]] && printf 'model %s\nforward_s 0.01\nlayer conv1 0.002\n' "$model" >"$profile"
# where_faster is faster on resnet101 (bf16 picks it), replay faster still on vgg16.
rate=100
[[ $model == resnet101 && $graph == where_faster ]] && rate=120
[[ $model == vgg16 && $replay == true ]] && rate=110
printf '{"kind":"bench","model":"%s","precision":"%s","conv_algorithm":"winograd","cudnn_graph":"%s","cuda_graph":%s,"batch_per_rank":64,"median_images_per_s":%s}\n' \
  "$model" "$precision" "$graph" "$replay" "$rate"
SH
chmod +x "$kit/bin/ringtrain"
# python: PyTorch's step at 40 img/s (inception_v3 in bf16 at 200, the worst ratio), the photo tree
# (empty folders, or with STUB_LIB a real one), a -c program checked to compile; anything else (the
# script's own tables) goes to the real python3, given the libraries STUB_LIB names where the
# system's are hidden.
cat >"$work/python" <<SH
#!/usr/bin/env bash
case "\$1" in
  bench/torch_gpu_train.py)
    echo "torch \$2 \$5\$([[ \$* == *--profile* ]] && echo ' profile')" >>"\$STUB_CALLS"
    sleep "\${STUB_SLEEP:-0}"
    rate=40; [[ \$2 == inception_v3 && \$5 == bf16 ]] && rate=200
    for ((i = 1; i <= \$#; i++)); do [[ \${!i} == --profile ]] && { j=\$((i + 1)); echo "stand-in profiler table" >"\${!j}"; }; done
    echo "{\"kind\": \"torch_gpu\", \"model\": \"\$2\", \"precision\": \"\$5\", \"images_per_s\": \$rate}"; exit 0 ;;
  bench/make_photo_tree.py) [[ -n \${STUB_LIB:-} ]] || { mkdir -p "\$3"; exit 0; } ;;
  -c) $real_python -c 'import sys; compile(sys.argv[1], "-c", "exec")' "\$2" && echo "PyTorch stand-in"; exit ;;
esac
exec env \${STUB_LIB:+LD_LIBRARY_PATH=\$STUB_LIB} $real_python "\$@"
SH
chmod +x "$work/python"
export PYTHON=$work/python STUB_CALLS=$work/calls

# 1. Every part, scaled to a fifth: the graph-API suite hangs and is stopped at its deadline.
out=$work/out1
rc=0
timeout 300 bash "$source_dir/scripts/check_gpu.sh" --kit "$kit" --out "$out" --scale 0.2 \
  --precisions "bf16 tf32 fp16" >"$work/log1" 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "a failed part must make the exit status 1, got $rc: $(tail -n 20 "$work/log1")"
for f in summary.md versions.txt suites.log speed.jsonl speed_table.txt profile.txt check.log; do
  [[ -s $out/$f ]] || fail "$f is missing or empty"
done
[[ $(find "$out" -type f | wc -l) -le 8 ]] || fail "more than 8 result files: $(ls "$out")"
rows=$(grep -cE '^\| [0-9] \| ' "$out/summary.md")
[[ $rows == 9 ]] || fail "expected 9 part rows in summary.md, got $rows: $(cat "$out/summary.md")"
grep -q '^| 1 | versions | .* | libraries complete; CUDA: CUDA runtime 13.0' "$out/summary.md" || fail "versions row: $(cat "$out/summary.md")"
grep -q '^| 3 | ops16 | .*mixed_precision: FAILED (exit 1): GpuMixedPrecision.Pooling/0; 1 passed' "$out/summary.md" ||
  fail "the failed test is not named: $(grep ops16 "$out/summary.md")"
grep -q '^| 6 | graph_api | .*graph_api: TIMED OUT in GpuParity.Conv2dFp32ThroughTheGraphApi; model_steps: not started' "$out/summary.md" ||
  fail "the hung suite is not named, or the part went on past its deadline: $(grep graph_api "$out/summary.md")"
took=$(awk -F'|' '$3 ~ /graph_api/ {print $5}' "$out/summary.md")
awk "BEGIN { exit !($took >= 6.5 && $took < 12) }" || fail "the hung part took $took s; its deadline was 7 s"
grep -q '^| 7 | images | .*sgd: train loss 2.3021, data wait 1.5%' "$out/summary.md" || fail "images row: $(grep images "$out/summary.md")"
grep -q "train.optimizer=lars" "$work/calls" || fail "LARS was not trained: $(grep train "$work/calls")"
grep -q '^| 2 | ops | .*parity: 3 passed, 1 skipped' "$out/summary.md" || fail "ops row: $(grep ops "$out/summary.md")"
# The speed part: bf16 searched per model, its best setting carried on, PyTorch after each model.
expected_calls="bench resnet101 bf16 off false
bench resnet101 bf16 where_faster false
bench resnet101 bf16 where_faster true
torch resnet101 bf16
bench vgg16 bf16 off false
bench vgg16 bf16 where_faster false
bench vgg16 bf16 off true
torch vgg16 bf16"
got=$(grep -E '^(bench|torch) ' "$work/calls" | head -n 8)
[[ $got == "$expected_calls" ]] || fail "the bf16 search ran, in order:
$got
expected:
$expected_calls"
grep -q '^bench resnet101 tf32 where_faster false$' "$work/calls" || fail "resnet101's best bf16 setting is not used at tf32"
grep -q '^bench vgg16 tf32 off true$' "$work/calls" || fail "vgg16's best bf16 setting is not used at tf32"
grep -q '"kind":"failed","model":"vgg16","precision":"fp16"' "$out/speed.jsonl" || fail "the failed run is not recorded"
grep -q '^| resnet101 | bf16 | where_faster | false | 120.0 | 40.0 | 3.00 |$' "$out/summary.md" || fail "summary's speed table: $(cat "$out/summary.md")"
grep -q '^| inception_v3 | bf16 | .* | 0.50 |$' "$out/summary.md" || fail "inception_v3's ratio: $(cat "$out/summary.md")"
[[ $(grep -c ' 2.50$' "$out/speed_table.txt") -ge 4 ]] || fail "speed_table.txt: $(cat "$out/speed_table.txt")"
# The profile: the worst ratio (Inception-v3 bf16, 100 / 200), both sides.
grep -q '^| 9 | profile | .* | inception_v3 bf16; ringtrain_profile: passed; pytorch_profile: passed |' "$out/summary.md" ||
  fail "profile row: $(grep profile "$out/summary.md")"
grep -q '^bench inception_v3 bf16 .* profile$' "$work/calls" && grep -q '^torch inception_v3 bf16 profile$' "$work/calls" ||
  fail "the profiles did not run on the worst ratio: $(tail -n 3 "$work/calls")"
grep -q 'layer conv1' "$out/profile.txt" && grep -q 'stand-in profiler table' "$out/profile.txt" || fail "profile.txt: $(cat "$out/profile.txt")"
# The header's time table is the code's, and adds up to at most 8 minutes.
script=$source_dir/scripts/check_gpu.sh
total=0
while read -r name seconds; do
  grep -qE "^# \| [0-9] \| $name +\| $seconds +\|" "$script" || fail "the header's table does not give $name $seconds s"
  total=$((total + seconds))
done < <(sed -n 's/^declare -A budget=(//p' "$script" | tr -d ')' | tr ' ' '\n' | sed 's/\[\(.*\)\]=\(.*\)/\1 \2/')
[[ $total -le 480 ]] || fail "the parts' deadlines add up to $total s, over 8 minutes"
grep -qE "^# \|   \| total +\| $total +\|" "$script" || fail "the header's total is not $total"

# 2. The speed part alone with too little time: some runs are left, and the output says which.
: >"$work/calls"
STUB_SLEEP=0.4 bash "$source_dir/scripts/check_gpu.sh" --kit "$kit" --out "$work/out2" --parts "speed profile" \
  --scale 0.02 >"$work/log2" 2>&1 || true
grep -q "== left for lack of time: " "$work/log2" || fail "no run was left for lack of time: $(cat "$work/log2")"
grep -qE '^\| 1 \| speed \| [0-9.]+ \| [0-9.]+ \| [0-9]+ runs, 0 failed, [1-9][0-9]* left or stopped for lack of time' "$work/out2/summary.md" ||
  fail "speed row with runs left: $(cat "$work/out2/summary.md")"
awk -F'|' '$3 ~ /speed/ { exit !($5 <= $4 + 1) }' "$work/out2/summary.md" ||
  fail "the speed part overran its deadline by more than a second: $(grep speed "$work/out2/summary.md")"

# 3. Killed from outside while the trainer part hangs: the parts before it are kept.
out=$work/out3
STUB_HANG=trainer setsid bash "$source_dir/scripts/check_gpu.sh" --kit "$kit" --out "$out" --parts "versions ops ring trainer" \
  >"$work/log3" 2>&1 &
pid=$!
for _ in $(seq 200); do grep -q "== part 4, trainer" "$out/check.log" 2>/dev/null && break; sleep 0.1; done
kill -KILL -- -"$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
[[ $(grep -cE '^\| [0-9] \| ' "$out/summary.md") == 3 ]] || fail "a check cut off lost its finished parts: $(cat "$out/summary.md")"
grep -q "== ring: np3" "$out/suites.log" || fail "suites.log lost the ring's output"

# 4. The real kit, from this build tree.
if [[ ! -x $build_dir/tests/dist/test_gpu_ring ]]; then
  echo "check_gpu_test: this build has no CUDA, so the real kit is not gathered (parts 1-3 passed)"
  exit 0
fi
# --fast packs larger than the real kit: under 48 MiB here, the real one is too.
bash "$source_dir/scripts/gpu_kit.sh" --prebuilt "$build_dir" --out "$work/real/ringtrain-gpu-kit.tar.xz" --fast >"$work/kit.log" 2>&1 ||
  fail "gpu_kit.sh failed: $(cat "$work/kit.log")"
grep -q "every library is in the kit or provided by the machine" "$work/kit.log" || fail "no closure verdict: $(cat "$work/kit.log")"
size=$(stat -c %s "$work/real/ringtrain-gpu-kit.tar.xz")
[[ $size -le $((48 * 1024 * 1024)) ]] || fail "the kit is $size bytes, over 48 MiB"
echo "check_gpu_test: the kit is $((size / 1024 / 1024)) MiB"
# A library left out is caught by the closure check.
rm "$work/real/ringtrain-gpu-kit/lib/libjpeg.so.62"
if bash "$source_dir/scripts/gpu_kit.sh" --verify "$work/real/ringtrain-gpu-kit" --cuda-may-be-missing >"$work/verify.log" 2>&1; then
  fail "the closure check missed a library taken out of the kit"
fi
grep -q "libjpeg.so.62 comes from .*, outside the kit" "$work/verify.log" || fail "the missing library is not named: $(cat "$work/verify.log")"
if [[ $(id -u) != 0 ]] || ! unshare -m --propagation private true 2>/dev/null; then
  echo "check_gpu_test: not root (or no mount namespaces): the kit was not run with the system's libraries hidden"
  exit 0
fi
# Hide, in a mount namespace of its own, the system's copy of every library the kit carries, Open
# MPI's whole installation and Fashion-MNIST; then unpack the kit and run the check's versions and
# ring parts (their tests skip without a GPU, but the binaries load and Open MPI launches 3 and 4
# ranks), and see that the Fashion-MNIST the check lent is taken away again.
cat >"$work/hidden.sh" <<'SH'
set -e
kit_lib=$1; shift
for d in $(ompi_info --parsable --path all | sed -n 's/^path:\(pkglibdir\|pkgdatadir\|sysconfdir\)://p') \
         /usr/lib/x86_64-linux-gnu/pmix2; do
  [[ -d $d ]] && mount -t tmpfs none "$d"
done
for f in /usr/bin/orted /usr/bin/orterun; do mount --bind /dev/null "$f"; done
[[ -d /usr/share/datasets ]] && mount -t tmpfs none /usr/share/datasets  # no Fashion-MNIST: the check lends the kit's
for l in "$kit_lib"/*; do
  for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu; do
    [[ -e $d/${l##*/} ]] && mount --bind /dev/null "$(readlink -f "$d/${l##*/}")"
  done
done
rc=0
"$@" || rc=$?
[[ ! -e /usr/share/datasets/fashion-mnist ]] || { echo "hidden.sh: the lent Fashion-MNIST was left behind" >&2; exit 3; }
exit "$rc"
SH
rc=0
STUB_LIB=$work/real/ringtrain-gpu-kit/lib PYTHON=$work/python unshare -m --propagation private bash "$work/hidden.sh" "$work/real/ringtrain-gpu-kit/lib" \
  bash "$source_dir/scripts/check_gpu.sh" --kit "$work/real/ringtrain-gpu-kit.tar.xz" --out "$work/out4" \
  --parts "versions ops ops16 ring trainer graph_api images" >"$work/log4" 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "the real kit's check exited $rc (expected 1: the images part needs a GPU): $(tail -n 20 "$work/log4")"
# Every filter names real tests (which skip here): no run may say that no test matched.
if grep -q "NO TEST MATCHED" "$work/out4/summary.md"; then fail "a filter matches no test: $(cat "$work/out4/summary.md")"; fi
for row in ops ops16 trainer graph_api; do
  line=$(grep "^| [0-9] | $row |" "$work/out4/summary.md")
  [[ $(grep -o '0 passed, [1-9][0-9]* skipped' <<<"$line" | wc -l) == $(grep -o ': ' <<<"$line" | wc -l) ]] ||
    fail "every run of $row should skip real tests: $line"
done
# The images part gets as far as asking for the GPU: its settings are a valid config.
[[ $(grep -c '^ringtrain: error: device = "cuda" but CUDA cannot use a GPU here' "$work/out4/suites.log") == 2 ]] ||
  fail "the images part's trainings (SGD, LARS) did not both reach the GPU: $(grep '^ringtrain: error' "$work/out4/suites.log")"
grep -q "Fashion-MNIST for the training tests: /usr/share/datasets/fashion-mnist, lent from the kit until the check ends$" \
  "$work/out4/versions.txt" || fail "Fashion-MNIST was not lent from the kit: $(cat "$work/out4/versions.txt")"
grep -q '^| 1 | versions | .* | libraries complete; CUDA: CUDA runtime' "$work/out4/summary.md" ||
  fail "the real kit's versions part: $(cat "$work/out4/summary.md") $(cat "$work/out4/versions.txt")"
grep -qE '^\| 4 \| ring \| .* \| np1: 0 passed, [0-9]+ skipped; np3: 0 passed, [0-9]+ skipped; np4: 0 passed, [0-9]+ skipped' "$work/out4/summary.md" ||
  fail "the real kit's ring part: $(cat "$work/out4/summary.md") $(tail -n 30 "$work/out4/suites.log")"
echo "check_gpu_test: passed"
