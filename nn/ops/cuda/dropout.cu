// Dropout as a packed map of dropout_scale (nn/ops/elementwise_math.h), its mask a function of
// (seed, step, element), recomputed in backward.
#include "base/check.h"
#include "nn/cuda/device_api.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/element_io.cuh"
#include "nn/ops/cuda/make.h"
#include "nn/ops/cuda/map_launch.cuh"
#include "nn/ops/elementwise_math.h"

namespace rt::cuda {
namespace {

// seed_step: (seed, step) in device memory (CudaDropout's), read when the kernel runs.
struct DropoutMask {
  const uint64_t* seed_step;
  float p;
  RT_HD float operator()(float x, int64_t i) const {
    return x * dropout_scale(seed_step[0], seed_step[1], static_cast<uint64_t>(i), p);
  }
};

__global__ void store_seed_step(uint64_t* seed_step, uint64_t seed, uint64_t step) {
  seed_step[0] = seed;
  seed_step[1] = step;
}

// The mask is recomputed in backward from (seed, step): nothing is stored. The pair lives in the
// op's device memory, written by a kernel set_step enqueues, so the mask kernels' arguments are
// the same every step and a recorded forward and backward replay with the current step (Note
// [CUDA graph steps] in nn/device.h).
class CudaDropout final : public DropoutOp {
 public:
  CudaDropout(double p, DType t)
      : p_(static_cast<float>(p)), dtype_(t), seed_step_(allocate_zeroed(2 * sizeof(uint64_t))) {}
  void set_step(uint64_t seed, uint64_t step) override {
    store_seed_step<<<1, 1, 0, context().stream>>>(seed_step(), seed, step);
    RT_CU_LAUNCHED();
  }
  void forward(const Tensor& x, Tensor& y, bool training) override {
    active_ = training && p_ > 0;
    apply(x, y);
  }
  void backward(const Tensor& dy, Tensor& dx) override { apply(dy, dx); }

 private:
  uint64_t* seed_step() const { return static_cast<uint64_t*>(seed_step_.get()); }
  void apply(const Tensor& in, Tensor& out) {
    if (!active_) return copy_on_gpu(out.data(), in.data(), in.bytes());
    launch_map(dtype_, DropoutMask{seed_step(), p_}, in.data(), nullptr, out.data(), in.numel());
  }

  float p_;
  DType dtype_;
  bool active_ = false;
  std::shared_ptr<void> seed_step_;  // (seed, step) as two uint64 on the GPU
};

}  // namespace

std::unique_ptr<DropoutOp> make_dropout(double p, const TensorSpec& x) {
  return std::make_unique<CudaDropout>(p, dtype_of(x));
}

}  // namespace rt::cuda
