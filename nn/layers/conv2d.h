// Conv2d layer: weight (K, C/g, R, S) and optional bias (K). Default initialisation is PyTorch's
// (uniform +-1/sqrt(fan_in)); models may ask for Kaiming-normal fan-out (torchvision's ResNet and
// VGG) or normal(0, std) (Inception-v3).
#pragma once

#include <memory>

#include "nn/layer.h"
#include "nn/ops/conv2d.h"

namespace rt {

class Conv2d final : public Layer {
 public:
  explicit Conv2d(const Conv2dGeometry& g);
  std::string_view kind() const override { return "conv2d"; }
  std::vector<ParamSpec> param_specs() const override;
  // torchvision's nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu"), zero bias.
  Conv2d& kaiming_fan_out();
  // nn.init.normal_(w, 0, std), zero bias (Inception-v3's initialisation).
  Conv2d& normal_init(double std);
  // K * P * Q * (C/g) * R * S per image.
  int64_t multiply_adds() const override { return macs_; }
  std::string_view algorithm() const override { return op_ ? name_of(op_->algorithm()) : ""; }
  int cudnn_graph_directions() const override { return op_ ? op_->cudnn_graph_directions() : 0; }

 protected:
  TensorSpec plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>& need_dx) override;
  void forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override;
  void backward_impl(const std::vector<const Tensor*>& x, const Tensor& y, const Tensor& dy,
                     const std::vector<Tensor*>& dx, const RunContext& ctx) override;

 private:
  Conv2dGeometry g_;
  bool kaiming_fan_out_ = false;
  double normal_std_ = 0;  // > 0: normal_init
  int64_t macs_ = 0;       // set by plan_impl
  std::unique_ptr<Conv2dOp> op_;
};

}  // namespace rt
