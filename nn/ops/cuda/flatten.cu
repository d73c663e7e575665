// Flatten on the GPU: to plain float32 (N, C*H*W), whatever the input's layout, by the layout
// conversion of reorder.cu.
#include "base/check.h"
#include "nn/cuda/device_api.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/element_io.cuh"
#include "nn/ops/cuda/make.h"

namespace rt::cuda {
namespace {

// To plain float32 (N, C*H*W) in PyTorch's order, whatever the input's layout (Note [Mixed
// precision]): the fully connected layers after it run in float32.
class CudaFlatten final : public FlattenOp {
 public:
  explicit CudaFlatten(const TensorSpec& x)
      : x_spec_(x),
        y_spec_(plain_spec({x.shape[0], numel(x.shape) / x.shape[0]}, Device::kCuda)),
        x_as_plain_(plain_spec(x.shape, Device::kCuda)) {}
  const TensorSpec& y_spec() const override { return y_spec_; }
  void forward(const Tensor& x, Tensor& y) override { convert_layout(x.data(), x.spec(), y.data(), x_as_plain_); }
  void backward(const Tensor& dy, Tensor& dx) override { convert_layout(dy.data(), x_as_plain_, dx.data(), x_spec_); }

 private:
  TensorSpec x_spec_, y_spec_;
  TensorSpec x_as_plain_;  // y seen as (N, C, H, W): same bytes, plain float32
};

}  // namespace

std::unique_ptr<FlattenOp> make_flatten(const TensorSpec& x) { return std::make_unique<CudaFlatten>(x); }

}  // namespace rt::cuda
