#!/usr/bin/env bash
# PowerSGD against PyTorch 1.13's powerSGD_hook (tests/dist/powersgd_oracle.py), at 2 and 3 ranks:
# the same gradients and first Q's, rank 4, two plain steps then four compressed ones (error
# feedback and warm start on), averaged by ringtrain's GradReducer over its ring (powersgd_job) and
# by the hook over gloo. Every rank's averages have the same bits, and each is PyTorch's to
# float32 rounding.
# usage: powersgd_oracle_test.sh POWERSGD_JOB SOURCE_DIR      (exit 77 = skipped)
set -euo pipefail
job=$1 src=$2
python=/usr/bin/python3
oracle=$src/tests/dist/powersgd_oracle.py
if ! "$python" -c "import torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook" 2> /dev/null; then
  echo "SKIP: $python has no PyTorch with powerSGD_hook"
  exit 77
fi
work=$(mktemp -d /tmp/ringtrain_powersgd_XXXXXX)
trap 'rm -rf "$work"' EXIT
rank=4 start=2
for ranks in 2 3; do
  dir=$work/np$ranks
  mkdir -p "$dir"
  "$python" "$oracle" make "$dir" "$ranks" 6 "$rank"
  "$src/scripts/mpi_launch.sh" --testing -np "$ranks" "$job" "$dir/in.safetensors" "$dir/ringtrain" "$rank" "$start"
  "$python" "$oracle" torch "$dir" "$ranks" "$rank" "$start"
  "$python" "$oracle" compare "$dir" "$ranks" "$start"
done
