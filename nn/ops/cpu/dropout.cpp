// Dropout by hand: the keep/drop decision for element i of step s is dropout_scale(seed, s, i),
// shared with the CUDA op, so masks do not depend on thread count. Elements are addressed
// physically, which is fine: padding lanes of blocked layouts hold zeros either way. A bf16
// activation (Note [CPU bfloat16]) is scaled in float32 and rounded back, as PyTorch's bf16 mul.
#include "nn/ops/dropout.h"

#include <cstring>
#include <vector>

#include "base/half_float.h"
#include "nn/ops/cpu/dnnl_util.h"
#include "nn/ops/cpu/make.h"
#include "nn/ops/elementwise_math.h"

namespace rt::cpu {
namespace {

class CpuDropout final : public DropoutOp {
 public:
  CpuDropout(double p, const TensorSpec& x)
      : p_(static_cast<float>(p)), bf16_(dt_of(x) == dt::bf16), n_(static_cast<int64_t>(x.bytes() / (bf16_ ? 2 : 4))) {}

  void set_step(uint64_t seed, uint64_t step) override { seed_ = seed, step_ = step; }

  void forward(const Tensor& x, Tensor& y, bool training) override {
    active_ = training && p_ > 0;
    if (!active_) {
      std::memmove(y.data(), x.data(), x.bytes());
      return;
    }
    scale_.resize(static_cast<size_t>(n_));
#pragma omp parallel for
    for (int64_t i = 0; i < n_; ++i) scale_[i] = dropout_scale(seed_, step_, static_cast<uint64_t>(i), p_);
    apply_scale(x, y);
  }

  void backward(const Tensor& dy, Tensor& dx) override {
    if (!active_) {
      std::memmove(dx.data(), dy.data(), dy.bytes());
      return;
    }
    apply_scale(dy, dx);
  }

 private:
  // out = in * scale_, element by element, in the tensors' own type.
  void apply_scale(const Tensor& in, Tensor& out) const {
    if (bf16_) {
      const auto* a = reinterpret_cast<const uint16_t*>(in.data());
      auto* b = reinterpret_cast<uint16_t*>(out.data());
#pragma omp parallel for
      for (int64_t i = 0; i < n_; ++i) b[i] = float_to_bf16(bf16_to_float(a[i]) * scale_[i]);
      return;
    }
#pragma omp parallel for
    for (int64_t i = 0; i < n_; ++i) out.data()[i] = in.data()[i] * scale_[i];
  }

  float p_;
  bool bf16_;
  int64_t n_;
  bool active_ = false;
  uint64_t seed_ = 0, step_ = 0;
  std::vector<float> scale_;  // 0 or 1/(1-p) per element of the last training forward
};

}  // namespace

std::unique_ptr<DropoutOp> make_dropout(double p, const TensorSpec& x) { return std::make_unique<CpuDropout>(p, x); }

}  // namespace rt::cpu
