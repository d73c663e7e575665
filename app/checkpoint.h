// Checkpoints: one safetensors file holding the model's state dict under torchvision's names
// ("layer1.0.conv1.weight", "bn1.running_mean", "bn1.num_batches_tracked"), the optimizer's
// momentum under "optimizer.momentum.<name>", and the training position as metadata.
// Written through write_file_atomically: a crash leaves the previous checkpoint intact; where the
// files go and which one a resume takes is Note [Checkpoint files] (app/checkpoint_files.h).
// All randomness in ringtrain is a pure function of (seed, epoch, step, sample), so the generator
// state is the seed and the position; nothing else needs saving.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/checkpoint_files.h"
#include "base/bucket_caps.h"
#include "formats/safetensors.h"
#include "nn/graph.h"
#include "nn/optim/optimizer.h"

namespace rt {

// An epoch's running figures, summed over ranks where the epoch ends or saves.
struct EpochSums {
  double loss = 0;         // batch losses, one per rank and step
  double loss_terms = 0;   // how many batch losses
  double correct1 = 0;     // top-1 hits
  double images = 0;       // training images
  double data_wait_s = 0;  // seconds ranks waited for batches
  double skipped = 0;      // unreadable files skipped
  static constexpr int kCount = 6;
  double* data() { return &loss; }  // the kCount figures, for one allreduce
  const double* data() const { return &loss; }
};
static_assert(sizeof(EpochSums) == EpochSums::kCount * sizeof(double));

struct TrainingPosition {
  int64_t epochs_done = 0;  // complete epochs
  int64_t step = 0;         // optimizer steps taken
  int64_t images_seen = 0;  // global images consumed (what a different world size resumes from)
  int64_t seed = 0;
  // Inside epoch `epochs_done` (0 at its start): positions of its permutation trained on (Note
  // [Resuming inside an epoch] in data/sampler.h), and the epoch's running figures summed over
  // ranks, so the epoch's report after a resume covers all of it.
  int64_t epoch_positions = 0;
  EpochSums epoch_sums{};
  double loss_scale = 0;  // fp16's dynamic loss scale (nn/optim/loss_scale.h); 0: not fp16
  // Wall-clock seconds since the run first started training, over every resumed part (Note
  // [Stopping at a target]): what time to a target counts.
  double run_seconds = 0;
  // The bucket caps the online tuner settled on (Note [Online bucket tuning] in
  // app/bucket_tuner.h), which a resumed run keeps; unset: the config's, or tuning not done.
  std::optional<BucketCaps> tuned_buckets = std::nullopt;
  // The caps the tuner put in force, from each step on, over every part of the run so far: a
  // tuned.toml's dist.autotune_trials, which a run stopped while tuning carries into its resume.
  std::vector<BucketTrial> bucket_trials = {};
};
inline constexpr const char* kOptimizerPrefix = "optimizer.";  // then the state's name, ".", the parameter's

// The state dict (parameters, buffers, counters), plain and named as torchvision.
// A float32 safetensors entry holding t's values, from whichever device t is on.
StTensor f32_tensor_of(const Tensor& t);

StFile model_state(const Graph& graph);
// Loads every tensor of the state dict; missing, unexpected or mis-shaped tensors are rt::Error
// naming the source, the tensor and both shapes, and so is a tensor holding NaN or infinity
// (resume, eval, predict and forward all load through here). Tensors outside the state dict (optimizer.*)
// are ignored.
void load_model_state(Graph& graph, const StFile& file, const std::string& source);

// Writes DIR's next numbered checkpoint and publishes it, keeping the newest `keep` (Note
// [Checkpoint files]); returns its path.
std::string save_checkpoint(const std::string& dir, const Graph& graph, Optimizer& optimizer,
                            const TrainingPosition& position, const std::string& model_name,
                            const std::string& resolved_config, int64_t keep = 1);
// The position a checkpoint file was saved at (its metadata only).
TrainingPosition read_training_position(const std::string& path);
// Restores graph and optimizer from DIR's newest checkpoint and returns the position.
TrainingPosition load_checkpoint(const std::string& dir, Graph& graph, Optimizer& optimizer,
                                 const std::string& model_name);

}  // namespace rt
