// A training run's running figures on one rank: the epoch's sums as a checkpoint saves them and
// its report needs them (loss, top-1, images, data wait, skipped files), the images/s of the
// epoch's steps so far, and the run's ETA from its mean step time.
#pragma once

#include <chrono>
#include <cstdint>

#include "app/run/epoch_sums.h"
#include "nn/ops/softmax_cross_entropy.h"

namespace rt {

class TrainTally {
 public:
  // `global_batch`: images a step takes on all ranks; `rank_batch`: on this one.
  TrainTally(int64_t global_batch, int64_t rank_batch) : global_batch_(global_batch), rank_batch_(rank_batch) {}

  // Starts epoch sums from `carried` (what a checkpoint saved inside this epoch had summed over
  // ranks: rank 0 carries it, the others start from zero), its first step at `first_step`.
  void begin_epoch(const EpochSums& carried, int64_t first_step);
  void add_data_wait(double seconds) { sums_.data_wait_s += seconds; }
  // One step of `seconds`, with its loss (the micro-batches' mean) and top-1 hits.
  void add_step(const LossResult& loss, double seconds);

  // The epoch's images per second over all ranks, after step `step` (0-based, in the epoch).
  double images_per_s(int64_t step) const;
  // Seconds until `steps_left` more steps are done, at this run's mean step time.
  double eta_s(int64_t steps_left) const;
  // This rank's share of the epoch so far, with the `skipped` files its data source counted in
  // this run's part of the epoch.
  EpochSums sums(int64_t skipped) const;
  // The share of this epoch's step time that ranks spent waiting for a batch, given the sums over
  // ranks.
  double data_wait_share(const EpochSums& summed, int ranks) const;
  // Seconds since the epoch began (evaluation included, where it has run).
  double epoch_seconds() const;

  double last_step_images_per_s() const { return static_cast<double>(global_batch_) / last_step_seconds_; }
  double run_seconds() const { return run_seconds_; }  // this run's training steps only
  int64_t run_steps() const { return run_steps_; }
  int64_t run_images() const { return run_steps_ * global_batch_; }

 private:
  int64_t global_batch_, rank_batch_;
  EpochSums sums_{};
  double skipped_before_ = 0;  // files skipped before this run's part of the epoch
  int64_t first_step_ = 0;
  double epoch_step_seconds_ = 0;
  std::chrono::steady_clock::time_point epoch_start_;
  double last_step_seconds_ = 0, run_seconds_ = 0;
  int64_t run_steps_ = 0;
};

}  // namespace rt
