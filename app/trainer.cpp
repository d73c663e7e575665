// The Trainer's state across steps: resume, save, and the position an epoch moves. It is built in
// trainer_setup.cpp, its step is train_step.cpp, its evaluation trainer_eval.cpp; the loop that
// drives it is the run's (app/training_run.cpp).
#include "app/trainer.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <limits>
#include <ostream>
#include <vector>

#include "app/checkpoint_files.h"
#include "app/gradient_accumulation.h"
#include "app/rank_state.h"
#include "base/check.h"
#include "data/sampler.h"

namespace rt {
namespace {

std::atomic<int64_t> g_step{-1};

std::vector<std::string> param_names(const Graph& graph) {
  std::vector<std::string> names;
  for (const ParamRef& p : graph.params()) names.push_back(p.name);
  return names;
}

}  // namespace

int64_t current_training_step() { return g_step.load(); }
void set_current_training_step(int64_t step) { g_step = step; }

Trainer::~Trainer() = default;

void Trainer::resume(const std::string& dir) {
  const TrainingPosition saved = load_checkpoint(dir, *graph_, *optimizer_, config_.model.name);
  // Each rank picked the newest file itself: a folder whose listing differs between hosts (a
  // stale network-file-system cache) would start the ranks at different steps.
  const std::vector<std::string> chosen = world_.allgather(newest_checkpoint(dir));
  for (int r = 1; r < world_.size(); ++r)
    RT_CHECK(chosen[static_cast<size_t>(r)] == chosen[0], "cannot resume from '", dir, "': rank 0 found ", chosen[0],
             " newest, rank ", r, " found ", chosen[static_cast<size_t>(r)],
             "; every rank must see the same folder (shared storage, not a copy per host)");
  RT_CHECK(saved.seed == config_.train.seed, "cannot resume from '", dir,
           "': it was trained with train.seed = ", saved.seed, ", the config says ", config_.train.seed);
  position_ = saved;
  loss_scaling_->resume(position_);
  // The step is counted at this world size: the epochs done, then as many of this epoch's steps
  // as leave the remaining positions (Note [Resuming inside an epoch]); at the world size that
  // saved, that is the saved step.
  const int64_t per_epoch = schedule_.steps_per_epoch;
  const int64_t left =
      data_.synthetic ? 0
                      : training_sampler(config_, world_, data_.train->count()).steps_from(position_.epoch_positions);
  position_.step = position_.epochs_done * per_epoch + (per_epoch - left);
  resumed_ = saved;
  if (world_.rank() == 0) {
    out_ << "ringtrain: resumed from " << newest_checkpoint(dir) << ", ";
    if (position_.epoch_positions == 0)
      out_ << "after epoch " << position_.epochs_done;
    else
      out_ << "inside epoch " << position_.epochs_done + 1 << " (" << position_.epoch_positions
           << " of its samples done)";
    out_ << " (" << position_.images_seen << " images seen; now step " << position_.step << ")\n";
  }
  if (reducer_ && reducer_->compression()) resume_rank_state(chosen[0], saved);
  // Every rank read the same file: the same caps everywhere.
  if (saved.tuned_buckets) resume_tuned_buckets(*saved.tuned_buckets);
}

// Where the checkpoint's run settled its tuning (Note [Online bucket tuning]): its caps, unless the
// config turns tuning off or they cannot apply here. Rank 0 says which.
void Trainer::resume_tuned_buckets(const BucketCaps& tuned) {
  const char* instead = config_.dist.autotune == Autotune::kOff ? "dist.autotune = \"off\""
                        : graph_->device() != Device::kCpu
                            ? "the GPU's collective sizes its buffers once, and the tuner timed CPUs"
                        : reducer_ && reducer_->compression() ? "PowerSGD's state follows the config's buckets"
                                                              : nullptr;
  if (!instead) {
    use_bucket_caps(tuned, /*settled=*/true);
    if (world_.rank() == 0)
      out_ << "ringtrain: the checkpoint's tuned buckets apply: dist.bucket_mb = " << tuned.bucket_mb
           << ", dist.first_bucket_mb = " << tuned.first_bucket_mb << "\n";
    return;
  }
  position_.tuned_buckets.reset();
  if (world_.rank() == 0)
    out_ << "ringtrain: the checkpoint's tuned buckets (" << tuned.text() << " MiB) are set aside: " << instead
         << "; the config's dist.bucket_mb and dist.first_bucket_mb apply\n";
}

// Note [Rank state] in app/rank_state.h.
void Trainer::resume_rank_state(const std::string& checkpoint, const TrainingPosition& saved) {
  const std::string path = rank_state_path(checkpoint, world_.rank(), world_.size());
  std::error_code ec;
  const bool found = std::filesystem::is_regular_file(path, ec);
  const std::vector<std::string> everywhere = world_.allgather(std::string(found ? "1" : "0"));
  const auto missing = std::count(everywhere.begin(), everywhere.end(), "0");
  if (missing == 0) {
    load_powersgd_state(*reducer_->compression(), param_names(*graph_), read_safetensors(path), path);
    return;
  }
  if (world_.rank() == 0 && saved.step > config_.dist.powersgd_start_step)  // compressed steps were made
    out_ << "ringtrain: PowerSGD's errors and Q's start afresh: " << missing << " of " << world_.size()
         << " ranks have no file of their own beside the checkpoint, like "
         << std::filesystem::path(rank_state_path(checkpoint, 0, world_.size())).filename().string()
         << " (saved at another rank count, or without compression)\n";
}

void Trainer::end_epoch() {
  ++position_.epochs_done;
  position_.epoch_positions = 0;
  position_.epoch_sums = EpochSums{};  // a save inside the epoch left its figures there
}

std::string Trainer::save(const EpochSums& sums, double run_seconds) {
  position_.run_seconds = run_seconds;
  gather_optimizer_state();
  check_replicas_now(str_cat("before the save after step ", position_.step), /*with_momentum=*/true);
  position_.epoch_sums = sums;
  world_.allreduce_sum(position_.epoch_sums.data(), EpochSums::kCount,
                       {&between_steps_, str_cat("the save after step ", position_.step, ": the epoch's figures")});
  loss_scaling_->save(position_);
  // The file holds batch-norm statistics averaged over ranks, as evaluation uses them; each rank
  // goes on from its own, as a run that does not save does.
  std::vector<std::vector<float>> own;
  for (const BufferRef& b : graph_->buffers()) {
    own.emplace_back(static_cast<size_t>(b.value.numel()));
    copy_bytes(own.back().data(), Device::kCpu, b.value.data(), graph_->device(), b.value.bytes());
  }
  if (reducer_ && reducer_->compression()) {
    // Every rank's own state first, so that a published checkpoint has it (Note [Rank state]).
    write_safetensors(rank_state_path(numbered_checkpoint_path(config_.checkpoint.dir, position_.images_seen),
                                      world_.rank(), world_.size()),
                      powersgd_state(*reducer_->compression(), param_names(*graph_)));
    double written = 1;
    world_.allreduce_sum(
        &written, 1, {&between_steps_, str_cat("the save after step ", position_.step, ": every rank's own state")});
  }
  average_buffers();
  std::string path;
  if (world_.rank() == 0)
    path = save_checkpoint(config_.checkpoint.dir, *graph_, *optimizer_, position_, config_.model.name,
                           to_toml(config_), config_.checkpoint.keep);
  // Every rank waits for rank 0's file: a rank that stopped on a signal and exited first could
  // make the launcher end rank 0 mid-write.
  // A busy file system is no fault: a slow write only warns, past dist.stall_warn_s.
  StallPolicy patient = between_steps_;
  patient.abort_s = std::numeric_limits<double>::infinity();
  double written = 1;
  world_.allreduce_sum(&written, 1, {&patient, str_cat("the save after step ", position_.step, ": rank 0's write")});
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
