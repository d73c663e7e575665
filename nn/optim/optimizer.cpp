#include "nn/optim/optimizer.h"

#include <algorithm>
#include <string>

#include "base/check.h"

#include "nn/optim/lars.h"
#include "nn/optim/sgd.h"

namespace rt {

void Optimizer::update_part(double lr, int64_t begin, int64_t end, int64_t own_begin, int64_t own_end,
                            const SumOverRanks& sum_over_ranks) {
  (void)begin, (void)end, (void)sum_over_ranks;
  if (own_end > own_begin) update(lr, own_begin, own_end);
}

void Optimizer::add_state(const std::string& name) {
  State s{name, Tensor(plain_spec({std::max<int64_t>(graph_.grad_floats(), 1)}, graph_.device())), {}};
  for (const ParamRef& p : graph_.trainable_params())
    s.views.emplace_back(p.value.spec(), s.arena.data() + p.offset, nullptr);
  states_.push_back(std::move(s));
}

std::unique_ptr<Optimizer> make_optimizer(OptimizerKind kind, Graph& graph, const OptimizerOptions& o) {
  const SgdOptions sgd{o.momentum, o.nesterov, o.weight_decay, o.decay_bias_and_bn};
  switch (kind) {
    case OptimizerKind::kSgd:
      return std::make_unique<Sgd>(graph, sgd);
    case OptimizerKind::kLars:
      return std::make_unique<Lars>(graph, sgd, LarsOptions{o.trust, o.lars_epsilon});
  }
  RT_ASSERT(false);
  return nullptr;
}

std::string describe_optimizer(OptimizerKind kind, const OptimizerOptions& o) {
  const bool lars = kind == OptimizerKind::kLars;
  std::string s(name_of(kind));
  if (lars) s += str_cat(" (trust coefficient ", o.trust, ", epsilon ", o.lars_epsilon, ")");
  s += str_cat(", momentum ", o.momentum, o.nesterov ? " (Nesterov)" : "", ", weight decay ", o.weight_decay);
  if (lars)
    s += o.decay_bias_and_bn ? " (biases and batch norm: no trust ratio)"
                             : " (biases and batch norm: neither trust ratio nor decay)";
  else if (!o.decay_bias_and_bn)
    s += " (not on biases and batch norm)";
  return s;
}

}  // namespace rt
