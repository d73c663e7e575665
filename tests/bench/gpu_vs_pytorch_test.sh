#!/usr/bin/env bash
# bench/gpu_vs_pytorch.sh's bookkeeping, with stand-ins for ringtrain and PyTorch (no GPU here):
# results kept in --results and not run again, a failed run recorded and the sweep carried on,
# --deadline leaving runs for a later call, and the table's ratios. The figures are the stand-ins'
# own (ringtrain 100 img/s, PyTorch 40), so every ratio must read 2.50.
# usage: gpu_vs_pytorch_test.sh SOURCE_DIR
set -euo pipefail
source_dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
calls=$work/calls

# ringtrain: `info`, and `bench` that prints one JSON line, or fails for fp16 with a CUDA graph.
cat >"$work/ringtrain" <<'SH'
#!/usr/bin/env bash
[ "$1" = info ] && { echo "ringtrain (stand-in)"; exit 0; }
model="" precision="" algorithm="" replay="" graph=""
while [ $# -gt 0 ]; do
  case "$1" in
    --config) model=$(basename "$2" .toml); shift 2 ;;
    --set) case "$2" in
             train.precision=*) precision=${2#*=} ;;
             train.conv_algorithm=*) algorithm=${2#*=} ;;
             train.cuda_graph=*) replay=${2#*=} ;;
             train.cudnn_graph=*) graph=${2#*=} ;;
           esac; shift 2 ;;
    *) shift ;;
  esac
done
echo "bench $model $precision $algorithm $graph $replay" >>"$STUB_CALLS"
sleep "${STUB_SLEEP:-0}"
if [ "$precision" = fp16 ] && [ "$replay" = true ]; then
  echo "ringtrain: error: train.cuda_graph: the stand-in refuses this one" >&2
  exit 3
fi
echo "bench: window 1: 100 img/s"
printf '{"kind":"bench","model":"%s","precision":"%s","conv_algorithm":"%s","cudnn_graph":"%s","cuda_graph":%s,"batch_per_rank":64,"median_images_per_s":100.0}\n' \
  "$model" "$precision" "$algorithm" "$graph" "$replay"
SH
# python: PyTorch's training step at 40 img/s; anything else goes to the real python3.
cat >"$work/python" <<'SH'
#!/usr/bin/env bash
if [ "$1" = bench/torch_gpu_train.py ]; then
  echo "torch $2 $5" >>"$STUB_CALLS"
  sleep "${STUB_SLEEP:-0}"
  echo "{\"kind\": \"torch_gpu\", \"model\": \"$2\", \"precision\": \"$5\", \"images_per_s\": 40.0}"
  exit 0
fi
exec python3 "$@"
SH
chmod +x "$work/ringtrain" "$work/python"
export STUB_CALLS=$calls PYTHON=$work/python

sweep() {  # sweep RESULTS [ARGS...]: the script on resnet101 with the stand-ins
  local results=$1
  shift
  "$source_dir/bench/gpu_vs_pytorch.sh" --ringtrain "$work/ringtrain" --models resnet101 --conv-algorithms winograd \
    --windows 2 --results "$results" "$@"
}
fail() { echo "gpu_vs_pytorch_test: $*" >&2; exit 1; }
count() { grep -c -- "$1" "$calls" || true; }

# 1. Four ringtrain runs and two PyTorch runs; the fp16 replay fails, the sweep goes on, and the
#    exit status says a run failed.
rc=0
sweep "$work/r1" --precisions "fp32 fp16" --cuda-graph "false true" >"$work/out1" || rc=$?
[ "$rc" = 1 ] || fail "a failed run must make the exit status 1, got $rc"
[ "$(count '^bench')" = 4 ] && [ "$(count '^torch')" = 2 ] || fail "expected 4 ringtrain and 2 PyTorch runs: $(cat "$calls")"
grep -q "ringtrain resnet101 fp16 winograd cudnn_graph=off cuda_graph=true FAILED (exit 3)" "$work/out1" ||
  fail "the failure is not reported: $(cat "$work/out1")"
grep -q "the stand-in refuses this one" "$work/out1" || fail "the failed run's own words are not shown"
[ "$(grep -c '"kind":"bench"' "$work/r1")" = 3 ] && [ "$(grep -c '"kind":"failed"' "$work/r1")" = 1 ] &&
  [ "$(grep -c '"kind": "torch_gpu"' "$work/r1")" = 2 ] || fail "results file: $(cat "$work/r1")"
[ "$(grep -c ' 2.50$' "$work/out1")" = 3 ] || fail "expected three ratios of 2.50 in the table: $(cat "$work/out1")"
grep -q "failed .*(exit 3)" "$work/out1" || fail "the table does not list the failed run"

# 2. The same command again runs nothing: every run, the failed one too, is held.
: >"$calls"
sweep "$work/r1" --precisions "fp32 fp16" --cuda-graph "false true" >"$work/out2"
[ ! -s "$calls" ] || fail "held runs ran again: $(cat "$calls")"
[ "$(grep -c ' 2.50$' "$work/out2")" = 3 ] || fail "the second table differs: $(cat "$work/out2")"

# 3. A deadline shorter than two runs: the first runs, the rest are left and said to be; the next
#    call without a deadline does exactly the rest.
: >"$calls"
STUB_SLEEP=2 sweep "$work/r2" --precisions "fp32 tf32" --deadline 3 >"$work/out3"
[ "$(wc -l <"$calls")" = 1 ] || fail "with the deadline only one run should start: $(cat "$calls")"
[ "$(grep -c '^== left for a later call' "$work/out3")" = 3 ] || fail "three runs should be left: $(cat "$work/out3")"
sweep "$work/r2" --precisions "fp32 tf32" >"$work/out4"
[ "$(count '^bench resnet101 fp32')" = 1 ] && [ "$(count '^bench resnet101 tf32')" = 1 ] &&
  [ "$(count '^torch')" = 2 ] || fail "the second call should run the three left: $(cat "$calls")"
[ "$(grep -c ' 2.50$' "$work/out4")" = 2 ] || fail "table after both calls: $(cat "$work/out4")"

# 4. --table-only prints the table and runs nothing.
: >"$calls"
sweep "$work/r2" --table-only >"$work/out5"
[ ! -s "$calls" ] && [ "$(grep -c ' 2.50$' "$work/out5")" = 2 ] || fail "--table-only: $(cat "$work/out5")"
echo "gpu_vs_pytorch_test: results kept, failures recorded, deadline honoured, ratios 2.50"
