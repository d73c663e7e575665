#!/usr/bin/env bash
# bench/large_batch_target_summary.py's arithmetic on a hand-made epochs.csv: the target is the
# baseline seeds' mean final top-1 minus 0.5 (90.5 - 0.5 = 90.0 here); a run's figure is the first
# epoch reaching it; medians, ranges and reaching counts over seeds; a run that never reaches it
# shows "-", one that diverged too; the best rate is seed 1's fewest epochs, its figure the median;
# the largest batch reaching the target; an unfinished run is left out; the curves drawn are
# the batch every schedule ran, not a sweep's smaller one.
# usage: large_batch_target_summary_test.sh SOURCE_DIR
set -u
src=$1
work=$(mktemp -d /tmp/ringtrain_lbt_summary_XXXXXX)
trap 'rm -rf "$work"' EXIT
{
  echo "run,arm,batch,epochs,seed,rate,epoch,test_top1"
  for e in 1 2 3 4; do echo "b1,baseline,64,4,1,0.4,$e,$(( 87 + e )).00"; done      # ends at 91
  for e in 1 2 3 4; do echo "b2,baseline,64,4,2,0.4,$e,$(( 86 + e )).00"; done      # ends at 90
  for s in 1 2 3; do                                         # reaches 90.0 at epochs 2, 3, 4
    for e in 1 2 3 4; do echo "l$s,lars,4096,4,$s,2.0,$e,$(( e >= s + 1 ? 90 : 80 )).00"; done
  done
  for s in 1 2 3; do for e in 1 2 3 4; do echo "g$s,sgd,4096,4,$s,0.05,$e,89.99"; done; done  # never
  for s in 1 2; do for e in 1 2 3 4; do echo "h$s,sgd,4096,4,$s,0.1,$e,$(( e >= 3 ? 95 : 50 )).00"; done; done
  echo "u1,lars,4096,4,1,9.9,1,99.00"                        # unfinished: left out
  echo "d1,lars,4096,4,1,8.8,1,60.00"; echo "d1,lars,4096,4,1,8.8,2,100.00"  # diverged, a NaN model's
  echo "d1,lars,4096,4,1,8.8,4,nan"                                          # "100%" not counted
  for e in 1 2; do echo "b3,baseline,64,2,1,0.4,$e,80.00"; echo "l4,lars,4096,2,1,2.0,$e,80.00"; done  # a 2nd schedule
  for e in 1 2 3 4; do echo "s1,lars,1024,4,1,1.0,$e,90.00"; done            # a sweep's batch
  for s in 1 2 3; do                  # seed 1 picks 2.0 (epoch 2, the others 4), not 3.0 (epoch 3)
    for e in 1 2 3 4; do echo "m$s,lars,8192,4,$s,2.0,$e,$(( e >= (s == 1 ? 2 : 4) ? 90 : 80 )).00"; done
  done
  for e in 1 2 3 4; do echo "n1,lars,8192,4,1,3.0,$e,$(( e >= 3 ? 90 : 80 )).00"; done
} > "$work/epochs.csv"
out=$(python3 "$src/bench/large_batch_target_summary.py" "$work/epochs.csv" 4 --plot "$work/curves.gp")
fail=0
expect() {
  if grep -qF -- "$1" <<< "$out"; then echo "PASS: $1"; else echo "FAIL: no line with: $1"; fail=1; fi
}
expect "| 4 | 91.00, 90.00 | 90.00 |"
expect "| lars | 4096 | 4 | 2.0 | 3 | 2-4 | 3 of 3 | 90.00 |"
expect "| sgd | 4096 | 4 | 0.05 per 256 | - | - | 0 of 3 | 89.99 |"
expect "| sgd | 4096 | 4 | 0.1 per 256 | 3 | 3-3 | 2 of 2 | 95.00 |"
expect "| lars | 4096 | 4 | 8.8 | - | - | 0 of 1 | diverged |"
expect "best rate: sgd at 4096 in 4 epochs: 0.1 (3 epochs to target)"
expect "best rate: lars at 4096 in 4 epochs: 2.0 (3 epochs to target)"
expect "best rate: lars at 8192 in 4 epochs: 2.0 (4 epochs to target)"
expect "largest batch where lars at its best rate reaches the target in 4 epochs (median): 8192"
for arm_rate in "sgd 0.1" "lars 2.0"; do
  got=$(python3 "$src/bench/large_batch_target_summary.py" "$work/epochs.csv" --best ${arm_rate% *} 4096 4)
  if [[ $got == "${arm_rate#* }" ]]; then echo "PASS: --best ${arm_rate% *}: $got"
  else echo "FAIL: --best ${arm_rate% *} printed '$got', expected ${arm_rate#* }"; fail=1; fi
done
if grep -qF 'lars_b4096_e2_s1_r2.0,' "$work/curves.gp" && ! grep -qF '_b1024_' "$work/curves.gp"; then
  echo "PASS: the curves are 4096's, the batch both schedules ran"
else echo "FAIL: the curves are not 4096's:"; cat "$work/curves.gp"; fail=1; fi
if grep -qF "| 9.9 |" <<< "$out"; then echo "FAIL: the unfinished run was counted"; fail=1; fi
[[ $fail -eq 0 ]] || echo "$out"
exit $fail
