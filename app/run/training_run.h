// Note [The run and the engine]: the Trainer makes steps. It holds the model, the optimizer and
// the reducer, and does a step, an evaluation, a save and a resume; it knows no epochs beyond the
// position a checkpoint keeps. A TrainingRun owns the epoch loop and what watches or steers it:
// the run folder, progress, the epoch's tallies and straggler figures (from what each step
// returns), what the ranks agree after each step (saves, signals, the report on SIGUSR2), the
// target, and MLPerf's log. flashlight keeps its loop in the application and DDP's reducer knows no
// epochs: the same shape. A run-level feature lives in a file of its own, called from the run's
// file; it never touches trainer.*.
#pragma once

#include <string>
#include <vector>

#include "app/run/mlperf_log.h"
#include "app/run/run_target.h"
#include "app/trainer.h"

namespace rt {

struct TrainResult {
  int stopped_by_signal = 0;    // the signal that stopped the run after saving (Note [Stopping on a signal]); 0: none
  std::string last_checkpoint;  // the path of this run's last save (rank 0); "" if none
  std::vector<double> step_losses;  // this rank's batch loss at each step of this run
  EvalResult last_eval;             // after the final epoch
  double train_seconds = 0;         // training steps only (no evaluation or checkpoints)
  double images_per_s = 0;          // global training images / train_seconds
  TargetOutcome target;             // eval.target_top1's outcome (Note [Stopping at a target])
};

// Where tests stop a run early, as a job that ends there would (none by default).
struct TrainLimits {
  int64_t epochs = 0;  // > 0: train() returns after this many epochs of this run
  int64_t steps = 0;   // > 0: train() returns after this many steps of this run, without saving (a crash)
};

class TrainingRun {
 public:
  // Made before the Trainer, whose building is MLPerf's init phase.
  TrainingRun(const Config& config, int rank) : mlperf_(config, rank) {}
  void set_limits(const TrainLimits& limits) { limits_ = limits; }
  // Trains to config.train.epochs, saving as [checkpoint] says and stopping early after a save on a
  // signal that the caller's StopSignals watches (train_command holds one). Fails before the first
  // step if checkpoint.dir cannot be created or written (the RunFolder).
  TrainResult train(Trainer& trainer);

 private:
  MlperfLog mlperf_;
  TrainLimits limits_;
};

// A run of `trainer` made after it (tests: no MLPerf init phase to time).
TrainResult train(Trainer& trainer, const TrainLimits& limits = {});
inline TrainResult train(Trainer&& trainer, const TrainLimits& limits = {}) { return train(trainer, limits); }

}  // namespace rt
