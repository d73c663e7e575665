// Linear (fully connected) layer on plain (N, I): weight (O, I), optional bias (O), initialised
// as PyTorch's nn.Linear (uniform +-1/sqrt(I)) unless a model asks for normal(0, std).
#pragma once

#include <cmath>
#include <memory>

#include "base/check.h"
#include "nn/layer.h"
#include "nn/ops/linear.h"

namespace rt {

class Linear final : public Layer {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true)
      : in_(in_features), out_(out_features), bias_(bias) {}
  std::string_view kind() const override { return "linear"; }
  // torchvision VGG's nn.init.normal_(w, 0, std) with zero bias.
  Linear& normal_init(double std) {
    normal_std_ = std;
    return *this;
  }
  int64_t multiply_adds() const override { return in_ * out_; }  // per image

  std::vector<ParamSpec> param_specs() const override {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_));
    const Init w = normal_std_ > 0 ? Init{Init::Kind::kNormal, normal_std_} : Init{Init::Kind::kUniform, bound};
    const Init b = normal_std_ > 0 ? Init{Init::Kind::kConstant, 0} : Init{Init::Kind::kUniform, bound};
    std::vector<ParamSpec> specs{{"weight", {out_, in_}, ParamRole::kWeight, w}};
    if (bias_) specs.push_back({"bias", {out_}, ParamRole::kBias, b});
    return specs;
  }

 protected:
  TensorSpec plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>& need_dx) override {
    RT_CHECK(x[0].shape.size() == 2 && x[0].shape[1] == in_ && x[0].is_plain(), "linear(", in_, " -> ", out_,
             ") expects a plain (N, ", in_, ") input, got ", x[0].describe(), " (flatten first)");
    op_ = make_linear(x[0].shape[0], in_, out_, bias_, need_dx[0], x[0].device, plan_context());
    return plain_spec({x[0].shape[0], out_}, x[0].device);
  }
  void forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    op_->forward(*x[0], params_[0], bias_ ? &params_[1] : nullptr, y);
  }
  void backward_impl(const std::vector<const Tensor*>& x, const Tensor&, const Tensor& dy,
                     const std::vector<Tensor*>& dx, const RunContext&) override {
    if (!frozen()) op_->backward_weights(*x[0], dy, grads_[0], bias_ ? &grads_[1] : nullptr);
    if (dx[0]) op_->backward_data(dy, params_[0], *dx[0]);
  }

 private:
  int64_t in_, out_;
  bool bias_;
  double normal_std_ = 0;
  std::unique_ptr<LinearOp> op_;
};

}  // namespace rt
