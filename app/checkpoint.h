// Checkpoints: one safetensors file holding the model's state dict under torchvision's names
// ("layer1.0.conv1.weight", "bn1.running_mean", "bn1.num_batches_tracked"), the optimizer's
// momentum under "optimizer.momentum.<name>", and the other parts' state as metadata (Note [Saved
// parts] in app/saved_state.h). Written through write_file_atomically: a crash leaves the previous
// checkpoint intact; where the files go and which one a resume takes is Note [Checkpoint files]
// (app/checkpoint_files.h).
#pragma once

#include <string>

#include "app/saved_state.h"
#include "nn/graph.h"
#include "nn/optim/optimizer.h"

namespace rt {

inline constexpr const char* kOptimizerPrefix = "optimizer.";  // then the state's name, ".", the parameter's

// The state dict (parameters, buffers, counters), plain and named as torchvision.
// A float32 safetensors entry holding t's values, from whichever device t is on.
StTensor f32_tensor_of(const Tensor& t);

StFile model_state(const Graph& graph);
// Loads tensor `name` of the file `source` into dst: an rt::Error where its shape differs or it
// holds NaN or infinity.
void copy_into(Tensor& dst, const StTensor& t, const std::string& name, const std::string& source);
// Loads every tensor of the state dict; missing, unexpected or mis-shaped tensors are rt::Error
// naming the source, the tensor and both shapes, and so is a tensor holding NaN or infinity
// (resume, eval, predict and forward all load through here). Tensors outside the state dict are
// an error too, but for the optimizer's (optimizer.*) and, in a checkpoint (`in_checkpoint`), the
// other parts' (Note [Saved parts]): its model name was checked.
void load_model_state(Graph& graph, const StFile& file, const std::string& source, bool in_checkpoint = false);

// The model as a part of the checkpoint: its state dict, its name (a resume of another model is
// refused, naming both) and the resolved config it trained with.
class SavedModel final : public SavedPart {
 public:
  SavedModel(Graph& graph, std::string model_name, std::string resolved_config)
      : graph_(graph), model_name_(std::move(model_name)), resolved_config_(std::move(resolved_config)) {}
  void save(StFile& into) override;
  void load(const StFile& from, const std::string& source) override;

 private:
  Graph& graph_;
  std::string model_name_, resolved_config_;
};

// The optimizer's state (momentum), one tensor per state and parameter.
class SavedOptimizer final : public SavedPart {
 public:
  SavedOptimizer(const Graph& graph, Optimizer& optimizer) : graph_(graph), optimizer_(optimizer) {}
  void save(StFile& into) override;
  void load(const StFile& from, const std::string& source) override;

 private:
  const Graph& graph_;
  Optimizer& optimizer_;
};

}  // namespace rt
