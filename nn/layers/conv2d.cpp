#include "nn/layers/conv2d.h"

#include <cmath>

namespace rt {

Conv2d::Conv2d(const Conv2dGeometry& g) : g_(g) {}

Conv2d& Conv2d::kaiming_fan_out() {
  kaiming_fan_out_ = true;
  return *this;
}

std::vector<ParamSpec> Conv2d::param_specs() const {
  const double fan_in = static_cast<double>(g_.in_channels / g_.groups * g_.kernel_h * g_.kernel_w);
  const double fan_out = static_cast<double>(g_.out_channels * g_.kernel_h * g_.kernel_w);
  const double bound = 1.0 / std::sqrt(fan_in);
  std::vector<ParamSpec> specs{{"weight", g_.weight_shape(), ParamRole::kWeight,
                                kaiming_fan_out_ ? Init{Init::Kind::kNormal, std::sqrt(2.0 / fan_out)}
                                                 : Init{Init::Kind::kUniform, bound}}};
  if (g_.bias)
    specs.push_back({"bias", {g_.out_channels}, ParamRole::kBias,
                     kaiming_fan_out_ ? Init{Init::Kind::kConstant, 0} : Init{Init::Kind::kUniform, bound}});
  return specs;
}

TensorSpec Conv2d::plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>& need_dx) {
  op_ = make_conv2d(g_, x[0], need_dx[0]);
  return op_->y_spec();
}

void Conv2d::forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) {
  op_->forward(*x[0], params_[0], g_.bias ? &params_[1] : nullptr, y);
}

void Conv2d::backward_impl(const std::vector<const Tensor*>& x, const Tensor&, const Tensor& dy,
                           const std::vector<Tensor*>& dx, const RunContext&) {
  op_->backward_weights(*x[0], dy, grads_[0], g_.bias ? &grads_[1] : nullptr);
  if (dx[0]) op_->backward_data(dy, params_[0], *dx[0]);
}

}  // namespace rt
