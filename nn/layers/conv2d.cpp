#include "nn/layers/conv2d.h"

#include <cmath>

namespace rt {

Conv2d::Conv2d(const Conv2dGeometry& g) : g_(g) {}

Conv2d& Conv2d::kaiming_fan_out() {
  kaiming_fan_out_ = true;
  return *this;
}

Conv2d& Conv2d::normal_init(double std) {
  normal_std_ = std;
  return *this;
}

std::vector<ParamSpec> Conv2d::param_specs() const {
  const double fan_in = static_cast<double>(g_.in_channels / g_.groups * g_.kernel_h * g_.kernel_w);
  const double fan_out = static_cast<double>(g_.out_channels * g_.kernel_h * g_.kernel_w);
  const double bound = 1.0 / std::sqrt(fan_in);
  Init w{Init::Kind::kUniform, bound}, b{Init::Kind::kUniform, bound};
  if (kaiming_fan_out_ || normal_std_ > 0) {
    w = {Init::Kind::kNormal, normal_std_ > 0 ? normal_std_ : std::sqrt(2.0 / fan_out)};
    b = {Init::Kind::kConstant, 0};
  }
  std::vector<ParamSpec> specs{{"weight", g_.weight_shape(), ParamRole::kWeight, w}};
  if (g_.bias) specs.push_back({"bias", {g_.out_channels}, ParamRole::kBias, b});
  return specs;
}

TensorSpec Conv2d::plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>& need_dx) {
  op_ = make_conv2d(g_, x[0], need_dx[0], plan_context());
  const Shape& y = op_->y_spec().shape;  // (N, K, P, Q)
  macs_ = y[1] * y[2] * y[3] * (g_.in_channels / g_.groups) * g_.kernel_h * g_.kernel_w;
  return op_->y_spec();
}

void Conv2d::forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) {
  op_->forward(*x[0], params_[0], g_.bias ? &params_[1] : nullptr, y);
}

void Conv2d::backward_impl(const std::vector<const Tensor*>& x, const Tensor&, const Tensor& dy,
                           const std::vector<Tensor*>& dx, const RunContext&) {
  if (!frozen()) op_->backward_weights(*x[0], dy, grads_[0], g_.bias ? &grads_[1] : nullptr);
  if (dx[0]) op_->backward_data(dy, params_[0], *dx[0]);
}

}  // namespace rt
