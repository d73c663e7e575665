#!/usr/bin/env bash
# The GPU check's real kit (scripts/gpu_kit.sh), gathered from this build tree, without a GPU: under
# 48 MiB, its library closure complete and a library taken out of it caught, the tests the check's
# filters name are in its binaries, and (as root) its binaries and its relocated Open MPI run the
# check's suite parts (scripts/check_gpu.sh) with the system's copies of every carried library and
# of Open MPI hidden, as on a machine that has none of them. tests/bench/check_gpu_test.sh tests the
# check itself with stand-ins.
#
# Gathering and packing the kit keeps both cores busy for a minute or more (CTest runs this test
# alone). The check's deadlines are scaled by what this machine measured: the closure check, which
# the versions part runs again, takes seconds here and 20 s on a slow machine, so every deadline is
# multiplied by `scale`, at least 1, enough for 3 times the closure check's seconds in the versions
# part; no verdict depends on how fast the kit's programs start here.
# usage: gpu_kit_test.sh SOURCE_DIR BUILD_DIR (exit status 77: the build has no CUDA, nothing to gather)
set -euo pipefail
source_dir=$1 build_dir=$2
if [[ ! -x $build_dir/tests/dist/test_gpu_ring ]]; then
  echo "gpu_kit_test: this build has no CUDA, so there is no kit to gather"
  exit 77
fi
work=$(mktemp -d)
trap '[[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"' EXIT
fail() { echo "gpu_kit_test: $*" >&2; exit 1; }
calc() { awk "BEGIN { printf \"%.2f\", $* }"; }
real_python=/usr/bin/python3
script=$source_dir/scripts/check_gpu.sh
# python: a -c program (PyTorch's versions) checked to compile; anything else (the photo tree, the
# script's own tables) goes to the real python3, given the kit's libraries where the system's are
# hidden.
cat >"$work/python" <<SH
#!/usr/bin/env bash
if [[ \$1 == -c ]]; then $real_python -c 'import sys; compile(sys.argv[1], "-c", "exec")' "\$2" && echo "PyTorch stand-in"; exit; fi
exec env \${STUB_LIB:+LD_LIBRARY_PATH=\$STUB_LIB} $real_python "\$@"
SH
chmod +x "$work/python"

# The tests the check names for the changes no GPU has run are in the binaries.
for pair in tests/nn/test_gpu_parity:GpuParity.LinearTf32IsFasterThanFp32 tests/nn/test_gpu_parity:GpuParity.ResNet101Step \
  tests/nn/test_gpu_parity:GpuParity.InceptionV3Step \
  tests/dist/test_gpu_ring:DeviceRingTest.TrainersShardedSgdAndLarsOnTheGpuMatchTheCpu; do
  [[ $("$build_dir/${pair%%:*}" --gtest_list_tests --gtest_filter="${pair#*:}" | grep -c '^  ') == 1 ]] ||
    fail "${pair#*:} is not a test of ${pair%%:*}"
done
# --fast packs larger than the real kit: under 48 MiB here, the real one is too.
bash "$source_dir/scripts/gpu_kit.sh" --prebuilt "$build_dir" --out "$work/real/ringtrain-gpu-kit.tar.xz" --fast >"$work/kit.log" 2>&1 ||
  fail "gpu_kit.sh failed: $(cat "$work/kit.log")"
grep -q "every library is in the kit or provided by the machine" "$work/kit.log" || fail "no closure verdict: $(cat "$work/kit.log")"
size=$(stat -c %s "$work/real/ringtrain-gpu-kit.tar.xz")
[[ $size -le $((48 * 1024 * 1024)) ]] || fail "the kit is $size bytes, over 48 MiB"
echo "gpu_kit_test: the kit is $((size / 1024 / 1024)) MiB"
grep -q '^export PMIX_MCA_gds=hash$' "$work/real/ringtrain-gpu-kit/env.sh" || fail "env.sh does not set PMIx's hash store"
# A library left out is caught by the closure check; its seconds scale the check's deadlines.
rm "$work/real/ringtrain-gpu-kit/lib/libjpeg.so.62"
t0=$(date +%s.%N)
if bash "$source_dir/scripts/gpu_kit.sh" --verify "$work/real/ringtrain-gpu-kit" --cuda-may-be-missing >"$work/verify.log" 2>&1; then
  fail "the closure check missed a library taken out of the kit"
fi
verify_s=$(calc "$(date +%s.%N) - $t0")
grep -q "libjpeg.so.62 comes from .*, outside the kit" "$work/verify.log" || fail "the missing library is not named: $(cat "$work/verify.log")"
scale=$(awk "BEGIN { s = (3 * $verify_s + 10) / 25; printf \"%.2f\", (s < 1 ? 1 : s) }")
echo "gpu_kit_test: the closure check took $verify_s s: the check's deadlines times $scale"
if [[ $(id -u) != 0 ]] || ! unshare -m --propagation private true 2>/dev/null; then
  echo "gpu_kit_test: not root (or no mount namespaces): the kit was not run with the system's libraries hidden"
  exit 0
fi
# Hide, in a mount namespace of its own, the system's copy of every library the kit carries, Open
# MPI's whole installation, ssh and Fashion-MNIST; then unpack the kit and run the check's suite
# parts (their tests skip without a GPU, but the binaries load and Open MPI launches 1, 3 and 4
# ranks), and see that the Fashion-MNIST the check lent is taken away again.
cat >"$work/hidden.sh" <<'SH'
set -e
kit_lib=$1; shift
for d in $(ompi_info --parsable --path all | sed -n 's/^path:\(pkglibdir\|pkgdatadir\|sysconfdir\)://p') \
         /usr/lib/x86_64-linux-gnu/pmix2; do
  [[ -d $d ]] && mount -t tmpfs none "$d"
done
for f in /usr/bin/orted /usr/bin/orterun; do mount --bind /dev/null "$f"; done
# No ssh or rsh, as in many containers: Open MPI then refuses even a job on this host alone.
for f in ssh rsh; do
  if p=$(command -v "$f"); then mount --bind /dev/null "$(readlink -f "$p")"; fi
done
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
  bash "$script" --kit "$work/real/ringtrain-gpu-kit.tar.xz" --out "$work/out5" --scale "$scale" \
  --parts "versions ops ops16 ring trainer graph_api steps images" >"$work/log5" 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "the real kit's check exited $rc (expected 1: the images part needs a GPU): $(tail -n 20 "$work/log5")"
grep -q "^| 0 | kit | $(calc "15 * $scale") | [0-9.]* | unpacked with xz; " "$work/out5/summary.md" || fail "the real kit's unpacking: $(cat "$work/out5/summary.md")"
# Each part took at most its deadline (plus 0.3 s of bookkeeping, times the scale).
awk -F'|' -v over="$(calc "0.3 * $scale")" '$2 ~ /^ [0-9]+ $/ && $5 > $4 + over { print "part" $3 "took" $5 "s, its deadline" $4; bad = 1 } END { exit bad }' "$work/out5/summary.md" ||
  fail "a part overran its deadline: $(cat "$work/out5/summary.md")"
if grep -q "Try 'timeout --help'\|invalid time interval" "$work/out5/check.log"; then fail "timeout was given a duration it cannot read: $(cat "$work/out5/check.log")"; fi
# Every filter names real tests (which skip here): no run may say that no test matched.
if grep -q "NO TEST MATCHED" "$work/out5/summary.md"; then fail "a filter matches no test: $(cat "$work/out5/summary.md")"; fi
for row in ops ops16 trainer graph_api steps; do
  line=$(grep "^| [0-9]* | $row |" "$work/out5/summary.md")
  [[ $(grep -o '0 passed, [1-9][0-9]* skipped' <<<"$line" | wc -l) == $(grep -o ': ' <<<"$line" | wc -l) ]] ||
    fail "every run of $row should skip real tests: $line"
done
# The tests for the changes no GPU has run are among those the parts ran (and skipped here).
for t in GpuParity.LinearTf32IsFasterThanFp32 GpuParity.ResNet101Step GpuParity.InceptionV3Step \
  DeviceRingTest.TrainersShardedSgdAndLarsOnTheGpuMatchTheCpu; do
  grep -q "^\[ RUN      \] $t\$" "$work/out5/suites.log" || fail "no part ran $t"
done
# The images part gets as far as asking for the GPU: its settings are a valid config.
[[ $(grep -c '^ringtrain: error: device = "cuda" but CUDA cannot use a GPU here' "$work/out5/suites.log") == 1 ]] ||
  fail "the images part's training did not reach the GPU: $(grep '^ringtrain: error' "$work/out5/suites.log")"
grep -q "Fashion-MNIST for the training tests: /usr/share/datasets/fashion-mnist, lent from the kit until the check ends$" \
  "$work/out5/versions.txt" || fail "Fashion-MNIST was not lent from the kit: $(cat "$work/out5/versions.txt")"
grep -q '^| 1 | versions | .* | libraries complete; CUDA: CUDA runtime' "$work/out5/summary.md" ||
  fail "the real kit's versions part: $(cat "$work/out5/summary.md") $(cat "$work/out5/versions.txt")"
grep -qE '^\| 4 \| ring \| .* \| np1: 0 passed, [0-9]+ skipped; powersgd_products: [^;|]*; np3: 0 passed, [0-9]+ skipped; np4: 0 passed, [0-9]+ skipped' "$work/out5/summary.md" ||
  fail "the real kit's ring part: $(cat "$work/out5/summary.md") $(tail -n 30 "$work/out5/suites.log")"
echo "gpu_kit_test: passed"
