// Note [Stopping at a target]: how MLPerf defines a result, time to a quality. With
// eval.target_top1 set, the run evaluates after epochs eval.offset_epochs + k x eval.every_epochs
// (and after the last), stops at the first evaluation whose top-1 reaches the target, and says
// after how many epochs and how many seconds since the run first started: wall-clock time over
// every resumed part, evaluations and checkpoints included (app/run/run_clock.h), as
// MLPerf's run_start to run_stop. train.epochs is then the cap: a run that reaches it without the
// target says so, and `ringtrain train` ends with kExitTargetMissed.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"
#include "formats/json.h"

namespace rt {

inline constexpr int kExitTargetMissed = 3;  // ran to train.epochs without reaching eval.target_top1

// Whether the run evaluates after its `epoch`-th epoch (1-based) of `last`.
bool evaluates_after(const EvalConfig& eval, int64_t epoch, int64_t last);

struct TargetOutcome {
  double target = 0;  // eval.target_top1; 0: none
  bool reached = false;
  int64_t epoch = 0;       // the epoch whose evaluation reached it, or the last one evaluated
  double top1 = 0;         // that evaluation's
  double run_seconds = 0;  // since the run first started, at that evaluation's end

  bool set() const { return target > 0; }
  // "reached the target top-1 75.90% (75.97%) after epoch 41, 11520 s since the run started".
  std::string line() const;
  Json record() const;  // {"kind": "target", ...} for metrics.jsonl
};

}  // namespace rt
