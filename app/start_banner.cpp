#include "app/start_banner.h"

#include <algorithm>
#include <iomanip>
#include <ostream>

#include "app/finetune.h"
#include "app/recipe_summary.h"
#include "base/check.h"
#include "nn/cpu_bf16.h"

namespace rt {

void print_start(Trainer& t, const ThreadSplit& split, const std::string& gpu_how) {
  const Config& config = t.config();
  const World& world = t.world();
  std::ostream& out = t.out();
  const Device device = t.graph().device();
  out << "ringtrain: model " << config.model.name << " (" << t.graph().parameter_count() << " parameters), ";
  const TrainerData& data = t.data();
  if (data.synthetic)
    out << "synthetic images of " << shape_str(data.input_shape);
  else
    out << data.train->count() << " training / " << data.test->count() << " test images of "
        << shape_str(data.input_shape);
  out << ", " << name_of(device);
  if (device == Device::kCuda)
    out << " (rank 0: " << gpu_how << ") in " << name_of(config.train.precision)
        << (t.loss_scaling().state() ? " with dynamic loss scaling" : "");
  if (device == Device::kCpu && config.train.precision == Precision::kBf16) {
    const CpuBf16 cpu = cpu_bf16();
    out << " in bf16 (rank 0: " << (cpu.native ? "bfloat16 units, oneDNN on " : "emulated by oneDNN on ") << cpu.isa
        << ")";
  }
  if (config.train.cuda_graph)
    out << ", steps after the first replayed as a CUDA graph (" << t.replay().covers() << ")";
  out << "\n"
      << "ringtrain: world " << world.size() << " rank(s)" << (world.uses_mpi() ? " over MPI" : "") << ", "
      << split.compute << " compute threads per rank ("
      << (config.train.threads > 0    ? split.compute_how
          : split.compute_how.empty() ? world.cpu_share().how
                                      : str_cat(split.compute_how, "; ", world.cpu_share().how))
      << ")"
      << (decodes_images(config.data.source)
              ? str_cat(", ", split.decoding, " decoding threads (", split.decoding_how, ")")
              : std::string())
      << ", global batch " << global_batch(config.train, world.size()) << " ("
      << (config.train.global_batch > 0 ? "fixed by train.global_batch: " : "") << config.train.batch_per_rank
      << " per rank"
      << (config.train.accumulate_steps > 1
              ? str_cat(" x ", config.train.accumulate_steps, " micro-batches, gradients summed before one allreduce")
              : std::string())
      << "), learning rate " << t.schedule().rates.base
      << (config.train.lr > 0 ? std::string(" (train.lr)") : str_cat(" (", config.train.lr_per_256, " per 256 images)"))
      << ", " << t.schedule().steps_per_epoch << " steps per epoch\n";
  if (config.train.clip_grad_norm > 0)
    out << "ringtrain: gradients clipped to global norm " << config.train.clip_grad_norm << "\n";
  if (config.train.bn_group > 1)
    out << "ringtrain: batch-norm statistics pooled over groups of " << config.train.bn_group
        << " ranks (train.bn_group), " << config.train.batch_per_rank * config.train.bn_group << " images each, "
        << (device == Device::kCuda ? "over NCCL" : "over shared memory") << "\n";
  out << "ringtrain: optimizer " << optimizer_summary(config.train) << "\n";
  if (const std::string frozen = trainable_summary(t.graph(), config.finetune); !frozen.empty())
    out << "ringtrain: " << frozen << "\n";
  if (config.finetune.head_lr_scale != 1)
    out << "ringtrain: the classifier learns at " << config.finetune.head_lr_scale
        << " x the schedule's rate (finetune.head_lr_scale)\n";
  if (const GradReducer* reducer = t.reducer())
    out << "ringtrain: gradients averaged by " << reducer->collective().describe() << " in "
        << reducer->buckets().size() << " bucket(s), " << (config.dist.overlap ? "overlapped with" : "after")
        << " backward"
        << (reducer->updates_parameters() ? str_cat(", ", t.optimizer().name(), " sharded across ranks") : "") << "\n";
  if (const GradReducer* reducer = t.reducer())
    if (const std::string hook = reducer->hook().describe(t.graph().trainable_count()); !hook.empty())
      out << "ringtrain: " << hook << "\n";
}

}  // namespace rt
