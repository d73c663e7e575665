#include "app/loss_scaling.h"

#include "nn/ops/sgd_update.h"

namespace rt {
namespace {

class Unscaled final : public LossScaling {
 public:
  double scale() const override { return 1; }
  bool gradients_apply(Graph&, int64_t) override { return true; }
  std::optional<LossScaleState> state() const override { return std::nullopt; }
  void resume(const TrainingPosition&) override {}
  void save(TrainingPosition&) const override {}  // keeps a scale it resumed with, for a later fp16 run
};

class DynamicLossScaling final : public LossScaling {
 public:
  double scale() const override { return scaler_.scale(); }
  bool gradients_apply(Graph& graph, int64_t step) override {
    return scaler_.update(all_finite(graph.device(), graph.grad_arena(), graph.arena_floats()), step);
  }
  std::optional<LossScaleState> state() const override { return scaler_.state(); }
  // A checkpoint of another precision saved none: the scale starts afresh and backs off within a
  // few steps if it must.
  void resume(const TrainingPosition& from) override {
    if (from.loss_scale > 0) scaler_.set_scale(from.loss_scale);
  }
  void save(TrainingPosition& to) const override { to.loss_scale = scaler_.scale(); }

 private:
  LossScaler scaler_;
};

}  // namespace

std::unique_ptr<LossScaling> make_loss_scaling(Precision precision) {
  if (precision == Precision::kFp16) return std::make_unique<DynamicLossScaling>();
  return std::make_unique<Unscaled>();
}

}  // namespace rt
