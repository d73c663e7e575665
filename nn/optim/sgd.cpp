#include "nn/optim/sgd.h"

#include "base/check.h"
#include "nn/ops/sgd_update.h"

namespace rt {

Sgd::Sgd(Graph& graph, SgdOptions options)
    : graph_(graph), options_(options), momentum_(plain_spec({std::max<int64_t>(graph.arena_floats(), 1)}, graph.device())) {
  RT_CHECK(options.momentum >= 0 && options.momentum < 1, "momentum must be in [0, 1), got ", options.momentum);
  RT_CHECK(options.weight_decay >= 0, "weight decay must be >= 0, got ", options.weight_decay);
  RT_CHECK(!options.nesterov || options.momentum > 0, "Nesterov momentum needs momentum > 0");
  for (const ParamRef& p : graph.params())
    momentum_views_.emplace_back(p.value.spec(), momentum_.data() + p.offset, nullptr);
}

void Sgd::step(double lr) {
  for (size_t i = 0; i < graph_.params().size(); ++i) {
    ParamRef& p = graph_.params()[i];
    const bool decays = options_.decay_bias_and_bn || p.role == ParamRole::kWeight;
    SgdStep s{static_cast<float>(lr), static_cast<float>(options_.momentum),
              decays ? static_cast<float>(options_.weight_decay) : 0.0f, options_.nesterov};
    sgd_update(graph_.device(), s, p.value.data(), p.grad.data(), momentum_views_[i].data(), p.value.numel());
  }
}

}  // namespace rt
