// What rank 0 prints as training starts (Trainer::print_start): the model and data, the world and
// its threads, the batch and rate, the optimizer, and how gradients are averaged.
#include <ostream>

#include "app/recipe_summary.h"
#include "app/thread_split.h"
#include "app/trainer.h"
#include "base/check.h"

namespace rt {

void Trainer::print_start(const ThreadSplit& split) const {
  const Config& config = config_;
  const Device device = graph_->device();
  out_ << "ringtrain: model " << config.model.name << " (" << graph_->parameter_count() << " parameters), ";
  if (synthetic_)
    out_ << "synthetic images of " << shape_str(input_shape_);
  else
    out_ << train_->count() << " training / " << test_->count() << " test images of " << shape_str(input_shape_);
  out_ << ", " << name_of(device);
  if (device == Device::kCuda)
    out_ << " (rank 0: " << gpu_.how << ") in " << name_of(config.train.precision)
         << (loss_scaling_->state() ? " with dynamic loss scaling" : "");
  if (config.train.cuda_graph) out_ << ", steps after the first replayed as a CUDA graph (" << replayed_work() << ")";
  out_ << "\n"
       << "ringtrain: world " << world_.size() << " rank(s)" << (world_.uses_mpi() ? " over MPI" : "") << ", "
       << split.compute << " compute threads per rank ("
       << (config.train.threads > 0    ? split.compute_how
           : split.compute_how.empty() ? world_.cpu_share().how
                                       : str_cat(split.compute_how, "; ", world_.cpu_share().how))
       << ")"
       << (decodes_images(config.data.source)
               ? str_cat(", ", split.decoding, " decoding threads (", split.decoding_how, ")")
               : std::string())
       << ", global batch " << config.train.batch_per_rank * config.train.accumulate_steps * world_.size() << " ("
       << config.train.batch_per_rank << " per rank"
       << (config.train.accumulate_steps > 1
               ? str_cat(" x ", config.train.accumulate_steps, " micro-batches, gradients summed before one allreduce")
               : std::string())
       << "), learning rate " << schedule_.base
       << (config.train.lr > 0 ? std::string(" (train.lr)")
                               : str_cat(" (", config.train.lr_per_256, " per 256 images)"))
       << ", " << steps_per_epoch_ << " steps per epoch\n";
  if (config.train.clip_grad_norm > 0)
    out_ << "ringtrain: gradients clipped to global norm " << config.train.clip_grad_norm << "\n";
  if (config.train.bn_group > 1)
    out_ << "ringtrain: batch-norm statistics pooled over groups of " << config.train.bn_group
         << " ranks (train.bn_group), " << config.train.batch_per_rank * config.train.bn_group << " images each, "
         << (device == Device::kCuda ? "over NCCL" : "over shared memory") << "\n";
  out_ << "ringtrain: optimizer " << optimizer_summary(config.train) << "\n";
  if (reducer_)
    out_ << "ringtrain: gradients averaged by " << reducer_->collective().describe() << " in "
         << reducer_->buckets().size() << " bucket(s), " << (config.dist.overlap ? "overlapped with" : "after")
         << " backward"
         << (reducer_->updates_parameters() ? str_cat(", ", optimizer_->name(), " sharded across ranks") : "") << "\n";
}

}  // namespace rt
