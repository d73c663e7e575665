// Dropout by hand: the keep/drop decision for element i of step s is dropout_scale(seed, s, i),
// shared with the CUDA op, so masks do not depend on thread count. Elements are addressed
// physically, which is fine: padding lanes of blocked layouts hold zeros either way.
#include "nn/ops/dropout.h"

#include <vector>

#include "nn/ops/elementwise_math.h"
#include "nn/ops/cpu/make.h"

namespace rt::cpu {
namespace {

class CpuDropout final : public DropoutOp {
 public:
  CpuDropout(double p, const TensorSpec& x) : p_(static_cast<float>(p)), n_(static_cast<int64_t>(x.bytes() / 4)) {}

  void set_step(uint64_t seed, uint64_t step) override { seed_ = seed, step_ = step; }

  void forward(const Tensor& x, Tensor& y, bool training) override {
    active_ = training && p_ > 0;
    if (!active_) {
      std::copy(x.data(), x.data() + n_, y.data());
      return;
    }
    scale_.resize(static_cast<size_t>(n_));
#pragma omp parallel for
    for (int64_t i = 0; i < n_; ++i) {
      const float s = dropout_scale(seed_, step_, static_cast<uint64_t>(i), p_);
      scale_[i] = s;
      y.data()[i] = x.data()[i] * s;
    }
  }

  void backward(const Tensor& dy, Tensor& dx) override {
    if (!active_) {
      std::copy(dy.data(), dy.data() + n_, dx.data());
      return;
    }
#pragma omp parallel for
    for (int64_t i = 0; i < n_; ++i) dx.data()[i] = dy.data()[i] * scale_[i];
  }

 private:
  float p_;
  int64_t n_;
  bool active_ = false;
  uint64_t seed_ = 0, step_ = 0;
  std::vector<float> scale_;  // 0 or 1/(1-p) per element of the last training forward
};

}  // namespace

std::unique_ptr<DropoutOp> make_dropout(double p, const TensorSpec& x) { return std::make_unique<CpuDropout>(p, x); }

}  // namespace rt::cpu
