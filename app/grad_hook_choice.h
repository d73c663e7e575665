// The gradient hook dist.compression asks for (Note [Gradient hooks] in dist/grad_hook.h), made
// over the reducer's buckets, with its per-rank state as a part of each checkpoint (Note [Saved
// parts] in app/saved_state.h). A second compression is a GradHook of its own and a branch here.
#pragma once

#include <memory>
#include <optional>

#include "app/gradient_buckets.h"
#include "app/saved_state.h"
#include "app/training_position.h"
#include "config/config.h"
#include "dist/grad_hook.h"
#include "nn/graph.h"

namespace rt {

struct GradHookChoice {
  std::unique_ptr<GradHook> hook;    // null: the reducer's plain average
  std::unique_ptr<SavedPart> state;  // per rank; null where the hook keeps none
};

// `resumed`: the position a resume loads, which the state's part reads.
GradHookChoice choose_grad_hook(const Config& config, const GradientBuckets& plan, const Graph& graph,
                                const std::optional<TrainingPosition>& resumed);

}  // namespace rt
