// The Trainer's state across steps: its saved parts, resume, save, and the position an epoch
// moves. It is built in trainer_setup.cpp, its step is train_step.cpp, its evaluation
// trainer_eval.cpp; the loop that drives it is the run's (app/run/training_run.cpp).
#include "app/trainer.h"

#include <atomic>
#include <ostream>
#include <vector>

#include "app/gradient_accumulation.h"
#include "base/check.h"
#include "data/sampler.h"

namespace rt {
namespace {

std::atomic<int64_t> g_step{-1};

}  // namespace

int64_t current_training_step() { return g_step.load(); }
void set_current_training_step(int64_t step) { g_step = step; }

Trainer::~Trainer() = default;

void Trainer::resume(const std::string& dir) {
  const std::string path = saved_.resume(dir);
  RT_CHECK(position_.resumed->seed == config_.train.seed, "cannot resume from '", dir,
           "': it was trained with train.seed = ", position_.resumed->seed, ", the config says ", config_.train.seed);
  position_.now = *position_.resumed;
  // The step is counted at this world size: the epochs done, then as many of this epoch's steps
  // as leave the remaining positions (Note [Resuming inside an epoch]); at the world size that
  // saved, that is the saved step.
  const int64_t per_epoch = schedule_.steps_per_epoch;
  const int64_t left =
      data_.synthetic
          ? 0
          : training_sampler(config_, world_, data_.train->count()).steps_from(position_.now.epoch_positions);
  position_.now.step = position_.now.epochs_done * per_epoch + (per_epoch - left);
  if (world_.rank() == 0) {
    out_ << "ringtrain: resumed from " << path << ", ";
    if (position_.now.epoch_positions == 0)
      out_ << "after epoch " << position_.now.epochs_done;
    else
      out_ << "inside epoch " << position_.now.epochs_done + 1 << " (" << position_.now.epoch_positions
           << " of its samples done)";
    out_ << " (" << position_.now.images_seen << " images seen; now step " << position_.now.step << ")\n";
  }
  saved_.resume_per_rank(path, out_);
}

void Trainer::end_epoch() {
  ++position_.now.epochs_done;
  position_.now.epoch_positions = 0;
}

std::string Trainer::save() {
  gather_optimizer_state();
  const std::string what = str_cat("the save after step ", position_.now.step);
  check_replicas_now("before " + what, /*with_momentum=*/true);
  // The file holds batch-norm statistics averaged over ranks, as evaluation uses them; each rank
  // goes on from its own, as a run that does not save does.
  std::vector<std::vector<float>> own;
  for (const BufferRef& b : graph_->buffers()) {
    own.emplace_back(static_cast<size_t>(b.value.numel()));
    copy_bytes(own.back().data(), Device::kCpu, b.value.data(), graph_->device(), b.value.bytes());
  }
  average_buffers();
  const std::string path =
      saved_.write(config_.checkpoint.dir, position_.now.images_seen, config_.checkpoint.keep, what, between_steps_);
  for (size_t i = 0; i < own.size(); ++i) {
    const Tensor& v = graph_->buffers()[i].value;
    copy_bytes(const_cast<float*>(v.data()), graph_->device(), own[i].data(), Device::kCpu, v.bytes());
  }
  return path;
}

void Trainer::gather_optimizer_state() {
  if (reducer_ && reducer_->updates_parameters())
    for (size_t k = 0; k < optimizer_->state_count(); ++k) reducer_->gather_updated(optimizer_->state_arena(k));
}

}  // namespace rt
