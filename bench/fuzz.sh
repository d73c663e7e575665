#!/usr/bin/env bash
# Fuzzes one target (tests/data/fuzz/fuzzer.sh lists them) for as long as asked, from its seeds,
# the committed regression files and the corpus an earlier run grew (kept in /tmp). Each finding is
# written into tests/data/fuzz/regressions/TARGET/ as a new regression file, which CI's fuzz test
# (tests/data/fuzz/fuzz_test.sh, every input once) then runs for good: commit it with its fix.
#   bench/fuzz.sh TARGET [SECONDS] [JOBS]      (defaults: 600 s, 1 job)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: bench/fuzz.sh TARGET [SECONDS] [JOBS]} seconds=${2:-600} jobs=${3:-1}
source tests/data/fuzz/fuzzer.sh
[[ -n ${fuzz_sources[$target]+x} ]] || { echo "fuzz: no target '$target' (the targets: ${fuzz_targets[*]})" >&2; exit 2; }
why=$(fuzz_usable)
[[ -z $why ]] || { echo "fuzz: $why" >&2; exit 1; }
work=/tmp/ringtrain_fuzz_$target
regressions=tests/data/fuzz/regressions/$target
mkdir -p "$work/corpus" "$regressions"
fuzz_build "$PWD" "$work/build" "$target"
fuzz_seeds "$target" "$work/seeds"
before=$(find "$regressions" -type f | wc -l)
parallel=()
[[ $jobs -gt 1 ]] && parallel=(-jobs="$jobs" -workers="$jobs")  # their logs, fuzz-N.log, go to $work
rc=0
(cd "$work" && exec "$work/build/${target}_fuzz" -max_total_time="$seconds" "${parallel[@]}" -max_len=8192 \
  -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$OLDPWD/$regressions/" corpus seeds "$OLDPWD/$regressions") || rc=$?
after=$(find "$regressions" -type f | wc -l)
echo "fuzz: $target for $seconds s: corpus of $(find "$work/corpus" -type f | wc -l) inputs; $((after - before)) new regression file(s) in $regressions"
exit "$rc"
