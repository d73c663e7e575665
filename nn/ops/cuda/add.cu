// The residual add and gradient accumulation as a packed map of a sum, on the inputs' element
// type and layout (Note [Mixed precision]); add's backward passes the gradient through.
#include "base/check.h"
#include "nn/cuda/device_api.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/element_io.cuh"
#include "nn/ops/cuda/make.h"
#include "nn/ops/cuda/map_launch.cuh"
#include "nn/ops/elementwise_math.h"

namespace rt::cuda {
namespace {

struct Sum {
  RT_HD float operator()(float a, float b, int64_t) const { return a + b; }
};
class CudaAdd final : public AddOp {
 public:
  explicit CudaAdd(DType t) : dtype_(t) {}
  void forward(const Tensor& a, const Tensor& b, Tensor& y) override {
    launch_map(dtype_, Sum{}, a.data(), b.data(), y.data(), a.numel());
  }
  void backward(const Tensor& dy, Tensor* da, Tensor* db) override {
    if (da) copy_on_gpu(da->data(), dy.data(), dy.bytes());
    if (db) copy_on_gpu(db->data(), dy.data(), dy.bytes());
  }

 private:
  DType dtype_;
};

}  // namespace

std::unique_ptr<AddOp> make_add(const TensorSpec& a, const TensorSpec& b) {
  RT_CHECK(a.same_as(b), "add on the GPU needs both inputs in one layout, got ", a.describe(), " and ", b.describe());
  return std::make_unique<CudaAdd>(dtype_of(a));
}

void accumulate(Tensor& dst, const Tensor& src) {
  RT_CHECK(dst.spec().same_as(src.spec()), "accumulate on the GPU needs one layout, got ", dst.spec().describe(),
           " and ", src.spec().describe());
  launch_map(dtype_of(dst.spec()), Sum{}, dst.data(), src.data(), dst.data(), dst.numel());
}

}  // namespace rt::cuda
