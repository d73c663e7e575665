// What every rank does after a step: save, stop, report (Note [Checkpoint files] in
// app/checkpoint_files.h, Note [Stopping on a signal] in app/run/stop_signals.h). A run saves after
// every checkpoint.every_epochs epochs and the last, every checkpoint.every_steps steps, at the
// first step checkpoint.every_minutes after the last save by rank 0's clock, and at once, then
// stopping, when any rank receives one of checkpoint.signals; it reports its stragglers when any
// rank receives SIGUSR2. Every rank decides alike, from one allreduce.
#pragma once

#include <chrono>
#include <cstdint>

#include "config/config.h"
#include "dist/world.h"

namespace rt {

// What the ranks agreed to do after a step.
struct AfterStep {
  bool save = false, stop = false;
  int signal = 0;           // the signal that stops the run, where one rank received it
  int signalled_ranks = 0;  // ranks that received one
  bool report = false;      // a rank received SIGUSR2 for the straggler report
};

class StepAgreement {
 public:
  // `stall`: how the agreement's allreduce waits (Note [Watched collectives]); it must outlive this.
  StepAgreement(const CheckpointConfig& checkpoint, int64_t epochs, const World& world, const StallPolicy* stall);

  // At the end of step `step` (counted from 1): sums the ranks' signal and clock flags in one
  // allreduce of 5 doubles where signals are watched or checkpoint.every_minutes is set. Every rank
  // calls it after every step; `bench` too, so that its figures include the cost.
  AfterStep after_step(int64_t step) const;
  // Whether epoch `epoch` (counted from 1) ends with a save: every_epochs, and the last.
  bool saves_after_epoch(int64_t epoch) const;
  // checkpoint.every_minutes counts from now: at the run's start, and after each save.
  void reset_clock() { last_save_ = std::chrono::steady_clock::now(); }

 private:
  const CheckpointConfig& checkpoint_;
  int64_t epochs_;
  const World& world_;
  const StallPolicy* stall_;
  std::chrono::steady_clock::time_point last_save_ = std::chrono::steady_clock::now();
};

}  // namespace rt
