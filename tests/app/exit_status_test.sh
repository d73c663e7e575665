#!/usr/bin/env bash
# The job's exit status says what kind of error ended it (Note [Exit statuses] in base/check.h), alone
# and through the real launcher: 78 for the command line or the config, 65 for a data file, 1 for
# anything else; `ringtrain elastic` relaunches only the last.
#   - a config that does not exist, an unknown key, an unknown argument: 78;
#   - a global batch that 3 ranks cannot divide, under the launcher: 78;
#   - a data folder that does not exist, a truncated IDX file: 65;
#   - one rank of 2 (under the launcher) whose data file is truncated, the other's whole: 65, and the
#     first error line is that rank's; 2 ranks whose configs differ: 78;
#   - a rank that fails otherwise (a fault planted at a step): 1.
# usage: exit_status_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
source "$src/tests/support/fashion_mnist.sh"
require_fashion_mnist
work=$(mktemp -d /tmp/ringtrain_exit_status_XXXXXX)
trap 'pkill -9 -f "$work/" 2> /dev/null; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh
fashion_mnist_subset "$work/data" 512 128 || exit 1
mkdir "$work/bad" && cp "$work/data/"* "$work/bad/" || exit 1
truncate -s 1000 "$work/bad/train-images-idx3-ubyte"
common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=1
        --set train.threads=1 --set log.progress=none "${subset_data[@]}")
fail=0

# expect NAME STATUS PATTERN COMMAND...: COMMAND exits with STATUS and its first error line matches
# PATTERN (grep -E).
expect() {
  local name=$1 want=$2 pattern=$3 got first
  shift 3
  timeout 120 "$@" > "$work/$name.out" 2>&1
  got=$?
  first=$(grep -m1 "^ringtrain: .*error" "$work/$name.out")
  if [[ $got -eq $want ]] && grep -Eq "$pattern" <<< "$first"; then
    echo "PASS: $name: exit $got: $first"
  else
    echo "FAIL: $name: exit $got (expected $want), first error line '$first' (expected /$pattern/)"
    tail -5 "$work/$name.out"
    fail=1
  fi
}

expect no_config 78 "cannot read config '$work/none.toml'" "$ringtrain" --config "$work/none.toml"
expect unknown_key 78 "train.bogus" "$ringtrain" "${common[@]}" --set train.bogus=1
expect unknown_argument 78 "unknown argument '--bogus'" "$ringtrain" --bogus
expect three_ranks 78 "rank [0-2] of 3 .*train.global_batch = 64 does not divide among 3 ranks" \
  "$launch" --testing -np 3 "$ringtrain" "${common[@]}" --set train.global_batch=64 --set checkpoint.dir="$work/three"
expect no_data 65 "$work/none/train-images-idx3-ubyte" \
  "$ringtrain" "${common[@]}" --set data.dir="$work/none" --set checkpoint.dir="$work/no_data"
expect truncated 65 "$work/bad/train-images-idx3-ubyte" \
  "$ringtrain" "${common[@]}" --set data.dir="$work/bad" --set checkpoint.dir="$work/truncated"
# Rank 1 alone reads a truncated file under the same path (its own mount of the bad copy), or
# gets another seed (the environment's overrides come after the command line's).
cat > "$work/on_rank1.sh" << EOF
#!/bin/sh
rank=\${OMPI_COMM_WORLD_RANK:-\${PMI_RANK:-}}
[ "\$rank" = 1 ] || exec "\$@"
[ "\$RANK1" = seed ] && RINGTRAIN_SET=train.seed=2 exec "\$@"
exec unshare -m --propagation private sh -c 'mount --bind "$work/bad" "$work/data" && exec "\$0" "\$@"' "\$@"
EOF
chmod +x "$work/on_rank1.sh"
if unshare -m --propagation private true 2> /dev/null; then
  RANK1=mount expect one_rank_bad_data 65 "rank 1 of 2 .*$work/data/train-images-idx3-ubyte: truncated" \
    "$launch" --testing -np 2 "$work/on_rank1.sh" "$ringtrain" "${common[@]}" --set checkpoint.dir="$work/one_bad"
else
  echo "NOTE: one_rank_bad_data not run: this machine cannot make a mount namespace (unshare -m)"
fi
RANK1=seed expect ranks_differ 78 "config key 'train.seed' differs between rank 0 and rank\(s\) 1" \
  "$launch" --testing -np 2 "$work/on_rank1.sh" "$ringtrain" "${common[@]}" --set checkpoint.dir="$work/differ"
RINGTRAIN_TEST_FAULT=1:step:3 expect fault 1 "rank 1 of 2 .*error" \
  "$launch" --testing --env RINGTRAIN_TEST_FAULT -np 2 "$ringtrain" "${common[@]}" --set checkpoint.dir="$work/fault"
exit $fail
