// Softmax cross-entropy by hand, in double per row for a stable log-sum-exp.
#include "nn/ops/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "nn/ops/cpu/make.h"
#include "nn/ops/elementwise_math.h"

namespace rt::cpu {

LossResult softmax_cross_entropy(const Tensor& logits, const int32_t* targets, double label_smoothing, Tensor* dlogits,
                                 double grad_scale) {
  const int64_t N = logits.dim(0), K = logits.dim(1);
  const double s = label_smoothing;
  LossResult r;
  double total = 0;
  std::vector<double> p(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; ++n) {
    const float* z = logits.data() + n * K;
    const int32_t t = targets[n];
    double zmax = z[0];
    for (int64_t k = 1; k < K; ++k) zmax = std::max(zmax, static_cast<double>(z[k]));
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += (p[k] = std::exp(z[k] - zmax));
    const double log_sum = std::log(sum) + zmax;
    // loss = -sum_k q_k log p_k with q = (1 - s) one_hot(t) + s / K.
    double mean_z = 0;
    for (int64_t k = 0; k < K; ++k) mean_z += z[k];
    mean_z /= static_cast<double>(K);
    total += (1 - s) * (log_sum - z[t]) + s * (log_sum - mean_z);
    int64_t above = 0;  // logits strictly larger than the target's: its rank
    for (int64_t k = 0; k < K; ++k) above += z[k] > z[t];
    if (std::isnan(z[t])) above = kUnranked;
    r.correct1 += above == 0;
    r.correct5 += above < 5;
    if (dlogits) {
      float* dz = dlogits->data() + n * K;
      const double g = grad_scale / static_cast<double>(N);
      for (int64_t k = 0; k < K; ++k) {
        const double q = (k == t ? 1 - s : 0) + s / static_cast<double>(K);
        dz[k] = static_cast<float>((p[k] / sum - q) * g);
      }
    }
  }
  r.loss = total / static_cast<double>(N);
  return r;
}

namespace {

// On the CPU the phases need no split: compute does all the work at once.
class CpuSoftmaxCrossEntropy final : public SoftmaxCrossEntropyOp {
 public:
  explicit CpuSoftmaxCrossEntropy(const TensorSpec& logits)
      : SoftmaxCrossEntropyOp(logits), targets_(static_cast<size_t>(logits.shape[0])) {}

 protected:
  void set_targets_impl(const int32_t* targets) override {
    std::copy(targets, targets + targets_.size(), targets_.begin());
  }
  void compute_impl(const Tensor& logits, double label_smoothing, Tensor* dlogits, double grad_scale) override {
    result_ = cpu::softmax_cross_entropy(logits, targets_.data(), label_smoothing, dlogits, grad_scale);
  }
  LossResult result_impl() override { return result_; }

 private:
  std::vector<int32_t> targets_;
  LossResult result_;
};

}  // namespace

std::unique_ptr<SoftmaxCrossEntropyOp> make_softmax_cross_entropy(const TensorSpec& logits) {
  return std::make_unique<CpuSoftmaxCrossEntropy>(logits);
}

}  // namespace rt::cpu
