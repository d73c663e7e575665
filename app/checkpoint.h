// Checkpoints: one safetensors file holding the model's state dict under torchvision's names
// ("layer1.0.conv1.weight", "bn1.running_mean", "bn1.num_batches_tracked"), the optimizer's
// momentum under "optimizer.momentum.<name>", and the training position as metadata.
// Written through write_file_atomically: a crash leaves the previous checkpoint intact.
// All randomness in ringtrain is a pure function of (seed, epoch, step), so the generator state
// is the seed and the position; nothing else needs saving.
#pragma once

#include <cstdint>
#include <string>

#include "formats/safetensors.h"
#include "nn/graph.h"
#include "nn/optim/sgd.h"

namespace rt {

struct TrainingPosition {
  int64_t epochs_done = 0;  // complete epochs
  int64_t step = 0;         // optimizer steps taken
  int64_t images_seen = 0;  // global images consumed (what a different world size resumes from)
  int64_t seed = 0;
  double loss_scale = 0;  // fp16's dynamic loss scale (nn/optim/loss_scale.h); 0: not fp16
};

inline constexpr const char* kCheckpointFile = "checkpoint.safetensors";
inline constexpr const char* kMomentumPrefix = "optimizer.momentum.";

// The state dict (parameters, buffers, counters), plain and named as torchvision.
// A float32 safetensors entry holding t's values, from whichever device t is on.
StTensor f32_tensor_of(const Tensor& t);

StFile model_state(const Graph& graph);
// Loads every tensor of the state dict; missing, unexpected or mis-shaped tensors are rt::Error
// naming the source, the tensor and both shapes. Tensors outside the state dict (optimizer.*)
// are ignored.
void load_model_state(Graph& graph, const StFile& file, const std::string& source);

void save_checkpoint(const std::string& dir, const Graph& graph, Sgd& sgd, const TrainingPosition& position,
                     const std::string& model_name, const std::string& resolved_config);
// Restores graph and optimizer from DIR/checkpoint.safetensors and returns the position.
TrainingPosition load_checkpoint(const std::string& dir, Graph& graph, Sgd& sgd, const std::string& model_name);

}  // namespace rt
