#include "app/loss_scaling.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/check.h"
#include "nn/ops/sgd_update.h"

namespace rt {
namespace {

constexpr const char* kKey = "loss_scale";

// The saved scale; 0 where the file has none.
double saved_scale(const StFile& from, const std::string& source) {
  const std::string s = from.meta(kKey);
  if (s.empty()) return 0;
  char* end = nullptr;
  const double scale = std::strtod(s.c_str(), &end);
  RT_CHECK(*end == '\0' && scale > 0 && std::isfinite(scale), source, ": metadata '", kKey, "' = '", s,
           "' is not a positive finite number");
  return scale;
}

void save_scale(StFile& into, double scale) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", scale);  // reads back to the same double
  into.metadata.emplace_back(kKey, text);
}

class Unscaled final : public LossScaling {
 public:
  double scale() const override { return 1; }
  bool gradients_apply(Graph&, int64_t) override { return true; }
  std::optional<LossScaleState> state() const override { return std::nullopt; }
  void load(const StFile& from, const std::string& source) override { kept_ = saved_scale(from, source); }
  void save(StFile& into) override {
    if (kept_ > 0) save_scale(into, kept_);
  }

 private:
  double kept_ = 0;  // a scale it resumed with, for a later fp16 run
};

class DynamicLossScaling final : public LossScaling {
 public:
  double scale() const override { return scaler_.scale(); }
  bool gradients_apply(Graph& graph, int64_t step) override {
    return scaler_.update(all_finite(graph.device(), graph.grad_arena(), graph.grad_floats()), step);
  }
  std::optional<LossScaleState> state() const override { return scaler_.state(); }
  // A checkpoint of another precision saved none: the scale starts afresh and backs off within a
  // few steps if it must.
  void load(const StFile& from, const std::string& source) override {
    if (const double scale = saved_scale(from, source); scale > 0) scaler_.set_scale(scale);
  }
  void save(StFile& into) override { save_scale(into, scaler_.scale()); }

 private:
  LossScaler scaler_;
};

}  // namespace

std::unique_ptr<LossScaling> make_loss_scaling(Precision precision) {
  if (precision == Precision::kFp16) return std::make_unique<DynamicLossScaling>();
  return std::make_unique<Unscaled>();
}

}  // namespace rt
