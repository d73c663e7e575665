// How a training step scales its loss: fp16 scales it dynamically (nn/optim/loss_scale.h; Note
// [Mixed precision] in nn/ops/cuda/gpu_layout.h), every other precision leaves it alone. The
// trainer holds one of the two and asks it the same questions either way.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "app/saved_state.h"
#include "nn/graph.h"
#include "nn/optim/loss_scale.h"
#include "nn/plan_context.h"

namespace rt {

// A part of the checkpoint (Note [Saved parts] in app/saved_state.h): fp16's scale as the metadata
// 'loss_scale', exactly; a run of another precision keeps the scale it resumed with for a later
// fp16 run, and a checkpoint without one leaves fp16's scale where it starts.
class LossScaling : public SavedPart {
 public:
  // The factor the loss, and with it every gradient, carries until the update divides it out.
  virtual double scale() const = 0;
  // After `step`'s gradients are final and averaged: whether the update runs. Every rank holds the
  // same gradients, so every rank decides alike.
  virtual bool gradients_apply(Graph& graph, int64_t step) = 0;
  // The scale and the steps skipped so far, for reports; nullopt where the loss is not scaled.
  virtual std::optional<LossScaleState> state() const = 0;
};

std::unique_ptr<LossScaling> make_loss_scaling(Precision precision);

}  // namespace rt
