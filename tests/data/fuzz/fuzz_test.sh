#!/usr/bin/env bash
# The fuzz targets (tests/data/fuzz/fuzzer.sh) over their seed corpus and the committed
# regression files (tests/data/fuzz/regressions/TARGET: each an input that once made a finding),
# every input once and nothing random, so the verdict is the same on every run. Longer fuzzing,
# which finds new regression files: bench/fuzz.sh.
# usage: fuzz_test.sh SOURCE_DIR [TARGET...]      (exit 77 = skipped)
set -u
src=$1
shift
source "$src/tests/data/fuzz/fuzzer.sh"
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${fuzz_targets[@]}")
why=$(fuzz_usable)
[[ -z $why ]] || { echo "SKIP: $why"; exit 77; }
work=$(mktemp -d /tmp/ringtrain_fuzz_XXXXXX)
trap 'rm -rf "$work"' EXIT
fuzz_build "$src" "$work" "${targets[@]}" || { echo "FAIL: the fuzz targets do not build"; exit 1; }
for t in "${targets[@]}"; do
  fuzz_seeds "$t" "$work/seeds_$t" || { echo "FAIL: no seed corpus for $t"; exit 1; }
  dirs=("$work/seeds_$t")
  [[ -d $src/tests/data/fuzz/regressions/$t ]] && dirs+=("$src/tests/data/fuzz/regressions/$t")
  if ! "$work/${t}_fuzz" -runs=0 -rss_limit_mb=1024 -timeout=10 -artifact_prefix="$work/" "${dirs[@]}" >"$work/$t.log" 2>&1; then
    tail -n 40 "$work/$t.log"
    echo "FAIL: $t: an input of its seeds or regressions is a finding (above)"
    exit 1
  fi
  echo "PASS: $t: $(find "${dirs[@]}" -type f | wc -l) inputs"
done
