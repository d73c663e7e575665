// ReLU as a packed map of relu_forward / relu_backward (nn/ops/elementwise_math.h), on its
// input's element type and layout (Note [Mixed precision]).
#include "base/check.h"
#include "nn/cuda/device_api.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/element_io.cuh"
#include "nn/ops/cuda/make.h"
#include "nn/ops/cuda/map_launch.cuh"
#include "nn/ops/elementwise_math.h"

namespace rt::cuda {
namespace {

// The per-element ops of the packed map: op(a, i) or op(a, b, i) for element i.
struct ReluForward {
  RT_HD float operator()(float x, int64_t) const { return relu_forward(x); }
};
struct ReluBackward {
  RT_HD float operator()(float y, float dy, int64_t) const { return relu_backward(y, dy); }
};
class CudaRelu final : public ReluOp {
 public:
  explicit CudaRelu(DType t) : dtype_(t) {}
  void forward(const Tensor& x, Tensor& y) override {
    launch_map(dtype_, ReluForward{}, x.data(), nullptr, y.data(), x.numel());
  }
  void backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
    launch_map(dtype_, ReluBackward{}, y.data(), dy.data(), dx.data(), y.numel());
  }

 private:
  DType dtype_;
};

}  // namespace

std::unique_ptr<ReluOp> make_relu(const TensorSpec& x) { return std::make_unique<CudaRelu>(dtype_of(x)); }

}  // namespace rt::cuda
