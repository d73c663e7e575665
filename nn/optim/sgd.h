// SGD with momentum, optional Nesterov and weight decay, as torch.optim.SGD (dampening 0), behind
// the optimizer seam (Note [Optimizer seam]). Momentum is its one state arena.
#pragma once

#include <functional>

#include "nn/optim/optimizer.h"

namespace rt {

struct SgdOptions {
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0;
  bool decay_bias_and_bn = false;  // false: biases and norm scales/shifts get no weight decay
};

class Sgd : public Optimizer {
 public:
  Sgd(Graph& graph, SgdOptions options);
  std::string name() const override { return "SGD"; }
  void update(double lr, int64_t begin, int64_t end, double grad_scale = 1) override;
  // All momentum, at the parameter arena's offsets; parameter i's (its shape).
  float* momentum_arena() { return state_arena(0); }
  Tensor& momentum(size_t i) { return state(0, i); }
  const SgdOptions& options() const { return options_; }

 protected:
  // The update of the arena floats [begin, end), parameter i at rate rate_of(i); with
  // lr_in_momentum, the rate rides inside the momentum buffer (sgd_update.h), as LARS's does.
  void update_with(int64_t begin, int64_t end, double grad_scale, bool lr_in_momentum,
                   const std::function<double(size_t)>& rate_of);

 private:
  SgdOptions options_;
};

}  // namespace rt
