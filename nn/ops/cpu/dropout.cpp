// Dropout by hand: the keep/drop decision for element i of step s is a pure function of
// (seed, s, i), so masks do not depend on thread count. Elements are addressed physically, which
// is fine: padding lanes of blocked layouts hold zeros either way.
#include "nn/ops/dropout.h"

#include <vector>

#include "base/rng.h"
#include "nn/ops/cpu/make.h"

namespace rt::cpu {
namespace {

constexpr uint64_t kDropoutStream = 0xD50F;

class CpuDropout final : public DropoutOp {
 public:
  CpuDropout(double p, const TensorSpec& x) : p_(static_cast<float>(p)), n_(static_cast<int64_t>(x.bytes() / 4)) {}

  void forward(const Tensor& x, Tensor& y, bool training, uint64_t seed, uint64_t step) override {
    active_ = training && p_ > 0;
    if (!active_) {
      std::copy(x.data(), x.data() + n_, y.data());
      return;
    }
    scale_.resize(static_cast<size_t>(n_));
    const float keep_scale = 1.0f / (1.0f - p_);
    const uint64_t stream_id = kDropoutStream ^ (step << 16);
#pragma omp parallel for
    for (int64_t i = 0; i < n_; ++i) {
      const float s = to_unit_float(hash3(seed, stream_id, static_cast<uint64_t>(i))) < p_ ? 0.0f : keep_scale;
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
  std::vector<float> scale_;  // 0 or 1/(1-p) per element of the last training forward
};

}  // namespace

std::unique_ptr<DropoutOp> make_dropout(double p, const TensorSpec& x) { return std::make_unique<CpuDropout>(p, x); }

}  // namespace rt::cpu
