#include "app/run/train_tally.h"

#include <algorithm>

namespace rt {

void TrainTally::begin_epoch(const EpochSums& carried, int64_t first_step) {
  sums_ = carried;
  skipped_before_ = carried.skipped;  // the data source counts only its own pass
  first_step_ = first_step;
  epoch_step_seconds_ = 0;
  epoch_start_ = std::chrono::steady_clock::now();
}

void TrainTally::add_step(const LossResult& loss, double seconds) {
  last_step_seconds_ = seconds;
  run_seconds_ += seconds;
  epoch_step_seconds_ += seconds;
  ++run_steps_;
  sums_.loss += loss.loss;
  sums_.loss_terms += 1;
  sums_.correct1 += static_cast<double>(loss.correct1);
  sums_.images += static_cast<double>(rank_batch_);
}

double TrainTally::images_per_s(int64_t step) const {
  return static_cast<double>((step + 1 - first_step_) * global_batch_) / epoch_step_seconds_;
}

double TrainTally::eta_s(int64_t steps_left) const {
  return run_seconds_ / static_cast<double>(run_steps_) * static_cast<double>(steps_left);
}

EpochSums TrainTally::sums(int64_t skipped) const {
  EpochSums s = sums_;
  s.skipped = skipped_before_ + static_cast<double>(skipped);
  return s;
}

double TrainTally::data_wait_share(const EpochSums& summed, int ranks) const {
  return summed.data_wait_s / static_cast<double>(ranks) / std::max(epoch_step_seconds_, 1e-9);
}

double TrainTally::epoch_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start_).count();
}

}  // namespace rt
