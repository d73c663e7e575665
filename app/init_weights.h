// Note [Fine-tuning]: a run may start from weights trained elsewhere (finetune.weights): a
// safetensors file under torchvision's names, as scripts/convert_weights.py writes a state_dict,
// or a ringtrain checkpoint. Every tensor of the model (parameters, batch-norm statistics and
// counters) whose name and shape the file has is loaded, after the model's own initialisation and
// before the first step. The classifier (Graph::head_layers) of another shape, or absent, keeps
// its fresh initialisation: a new head for model.num_classes. Anywhere else a tensor the file
// lacks or holds in another shape is an error naming it and both shapes, unless a prefix of
// finetune.partial covers it. The file's optimizer state is not used: the step, the optimizer and
// the schedule start afresh. A resume does not read the file again; its checkpoint holds all.
// finetune.freeze and head_lr_scale are app/finetune.h's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "nn/graph.h"

namespace rt {

struct InitWeights {
  std::string path;
  int64_t loaded = 0, tensors = 0;  // of the model's tensors
  std::vector<std::string> fresh;   // left at their initialisation: "fc.weight: new head, (1000, 2048) in the file"
  std::vector<std::string> unused;  // the file's tensors the model has no use for (optimizer state aside)
  int64_t optimizer_tensors = 0;    // a checkpoint's optimizer state, not used
};

// Loads finetune.weights into a planned, initialised graph of model `model_name` (every rank
// calls it; each reads the file). A missing or damaged file, a checkpoint of another model, or a
// tensor that does not fit outside the classifier and finetune.partial is an rt::Error naming the
// file and the tensors, and the graph is then unchanged.
InitWeights load_init_weights(Graph& graph, const FinetuneConfig& finetune, const std::string& model_name);
// The start banner's lines on what load_init_weights did.
std::string describe(const InitWeights& init);

}  // namespace rt
