// The one place where an op is bound to a device. Shapes are checked here, once, at plan time;
// then BACKEND(device, fn) picks cpu::fn or cuda::fn, which have the same signature.
#include "base/check.h"
#include "nn/ops/cpu/make.h"
#include "nn/ops/reorder.h"
#include "nn/ops/softmax_cross_entropy.h"
#ifdef RINGTRAIN_WITH_CUDA
#include "nn/ops/cuda/make.h"
#endif

namespace rt {
namespace {

#ifdef RINGTRAIN_WITH_CUDA
#define BACKEND(device, fn) ((device) == Device::kCuda ? &cuda::fn : &cpu::fn)
#else
void require_cpu(Device device, const char* op) {
  RT_CHECK(device == Device::kCpu, op, " on ", name_of(device),
           ": this ringtrain was built without CUDA (configure with -DRINGTRAIN_CUDA=ON)");
}
#define BACKEND(device, fn) (require_cpu((device), #fn), &cpu::fn)
#endif

}  // namespace

std::unique_ptr<Conv2dOp> make_conv2d(const Conv2dGeometry& g, const TensorSpec& x, bool need_dx,
                                      const PlanContext& plan) {
  g.validate(x.shape);
  return BACKEND(x.device, make_conv2d)(g, x, need_dx, plan);
}

std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormOptions& options, const TensorSpec& x) {
  RT_CHECK(x.shape.size() == 4, "batch_norm expects (N, C, H, W), got ", shape_str(x.shape));
  RT_CHECK(options.eps > 0 && options.momentum >= 0 && options.momentum <= 1,
           "batch_norm needs eps > 0 and momentum in [0, 1]");
  return BACKEND(x.device, make_batch_norm)(options, x);
}

std::unique_ptr<ReluOp> make_relu(const TensorSpec& x) { return BACKEND(x.device, make_relu)(x); }

std::unique_ptr<Pool2dOp> make_pool2d(const Pool2dGeometry& g, const TensorSpec& x) {
  g.validate(x.shape);
  return BACKEND(x.device, make_pool2d)(g, x);
}

std::unique_ptr<Pool2dOp> make_adaptive_avg_pool2d(int64_t out_h, int64_t out_w, const TensorSpec& x) {
  RT_CHECK(x.shape.size() == 4, "adaptive_avg_pool2d expects (N, C, H, W), got ", shape_str(x.shape));
  RT_CHECK(out_h >= 1 && out_w >= 1, "adaptive_avg_pool2d output size must be >= 1");
  return BACKEND(x.device, make_adaptive_avg_pool2d)(out_h, out_w, x);
}

std::unique_ptr<LinearOp> make_linear(int64_t batch, int64_t in_features, int64_t out_features, bool bias, bool need_dx,
                                      Device device, const PlanContext& plan) {
  RT_CHECK(batch >= 1 && in_features >= 1 && out_features >= 1, "linear needs positive sizes, got batch ", batch,
           ", in ", in_features, ", out ", out_features);
  return BACKEND(device, make_linear)(batch, in_features, out_features, bias, need_dx, plan);
}

std::unique_ptr<DropoutOp> make_dropout(double p, const TensorSpec& x) {
  RT_CHECK(p >= 0 && p < 1, "dropout probability must be in [0, 1), got ", p);
  return BACKEND(x.device, make_dropout)(p, x);
}

std::unique_ptr<ConcatOp> make_concat(const std::vector<TensorSpec>& xs) {
  RT_CHECK(!xs.empty(), "concat needs at least one input");
  for (const TensorSpec& x : xs) {
    RT_CHECK(x.shape.size() == 4 && x.shape[0] == xs[0].shape[0] && x.shape[2] == xs[0].shape[2] &&
                 x.shape[3] == xs[0].shape[3],
             "concat inputs must agree in N, H, W: ", shape_str(xs[0].shape), " vs ", shape_str(x.shape));
    RT_CHECK(x.device == xs[0].device, "concat inputs must be on one device");
  }
  return BACKEND(xs[0].device, make_concat)(xs);
}

std::unique_ptr<AddOp> make_add(const TensorSpec& a, const TensorSpec& b) {
  RT_CHECK(a.shape == b.shape, "add needs equal shapes, got ", shape_str(a.shape), " and ", shape_str(b.shape));
  return BACKEND(a.device, make_add)(a, b);
}

std::unique_ptr<FlattenOp> make_flatten(const TensorSpec& x) {
  RT_CHECK(x.shape.size() >= 2, "flatten expects at least 2 dimensions, got ", shape_str(x.shape));
  return BACKEND(x.device, make_flatten)(x);
}

void accumulate(Tensor& dst, const Tensor& src) {
  RT_CHECK(dst.shape() == src.shape(), "accumulate needs equal shapes, got ", shape_str(dst.shape()), " and ",
           shape_str(src.shape()));
  BACKEND(dst.device(), accumulate)(dst, src);
}

void reorder(const Tensor& src, Tensor& dst) {
  RT_CHECK(src.shape() == dst.shape() && src.device() == dst.device(), "reorder needs equal shapes and devices, got ",
           src.spec().describe(), " and ", dst.spec().describe());
  BACKEND(src.device(), reorder)(src, dst);
}

Tensor to_plain(const Tensor& t) {
  Tensor out(plain_spec(t.shape(), t.device()));
  reorder(t, out);
  return out;
}

namespace {

void check_logits(const TensorSpec& logits) {
  RT_CHECK(logits.shape.size() == 2 && logits.is_plain(), "softmax_cross_entropy expects plain (N, K) logits, got ",
           logits.describe());
}

void check_loss_arguments(const TensorSpec& logits, double label_smoothing, const Tensor* dlogits) {
  RT_CHECK(label_smoothing >= 0 && label_smoothing < 1, "label smoothing must be in [0, 1), got ", label_smoothing);
  if (dlogits) RT_CHECK(dlogits->spec().same_as(logits), "dlogits must match the logits' spec");
}

void check_targets(const int32_t* targets, int64_t N, int64_t K) {
  for (int64_t n = 0; n < N; ++n)
    RT_CHECK(targets[n] >= 0 && targets[n] < K, "sample ", n, " of the batch has label ", targets[n], ", expected 0..",
             K - 1);
}

}  // namespace

LossResult softmax_cross_entropy(const Tensor& logits, const int32_t* targets, double label_smoothing, Tensor* dlogits,
                                 double grad_scale) {
  check_logits(logits.spec());
  check_loss_arguments(logits.spec(), label_smoothing, dlogits);
  check_targets(targets, logits.dim(0), logits.dim(1));
  return BACKEND(logits.device(), softmax_cross_entropy)(logits, targets, label_smoothing, dlogits, grad_scale);
}

void SoftmaxCrossEntropyOp::set_targets(const int32_t* targets) {
  check_targets(targets, logits_.shape[0], logits_.shape[1]);
  set_targets_impl(targets);
}

void SoftmaxCrossEntropyOp::compute(const Tensor& logits, double label_smoothing, Tensor* dlogits, double grad_scale) {
  RT_CHECK(logits.spec().same_as(logits_), "the loss was planned for logits ", logits_.describe(), ", got ",
           logits.spec().describe());
  check_loss_arguments(logits_, label_smoothing, dlogits);
  compute_impl(logits, label_smoothing, dlogits, grad_scale);
}

std::unique_ptr<SoftmaxCrossEntropyOp> make_softmax_cross_entropy(const TensorSpec& logits) {
  check_logits(logits);
  return BACKEND(logits.device, make_softmax_cross_entropy)(logits);
}

void sgd_update(Device device, const SgdStep& step, float* w, const float* g, float* v, int64_t n) {
  BACKEND(device, sgd_update)(step, w, g, v, n);
}

bool all_finite(Device device, const float* x, int64_t n) { return BACKEND(device, all_finite)(x, n); }

double sum_of_squares(Device device, const float* x, int64_t n) { return BACKEND(device, sum_of_squares)(x, n); }

uint64_t fingerprint(Device device, const float* x, int64_t n) { return BACKEND(device, fingerprint)(x, n); }

void pack_channels(Device device, const float* first, const float* second, float* pooled, int64_t channels) {
  BACKEND(device, pack_channels)(first, second, pooled, channels);
}

void group_variance_terms(Device device, const float* local_mean, const float* local_var, double biased, float* pooled,
                          int64_t channels) {
  BACKEND(device, group_variance_terms)(local_mean, local_var, biased, pooled, channels);
}

void take_group_statistics(Device device, const float* pooled, double momentum, double unbias, float* mean, float* var,
                           float* running_mean, float* running_var, int64_t channels) {
  BACKEND(device, take_group_statistics)(pooled, momentum, unbias, mean, var, running_mean, running_var, channels);
}

void group_backward_affines(Device device, const float* pooled, double n, const float* gamma, const float* mean,
                            const float* var, double eps, float* slope, float* offset, int64_t channels) {
  BACKEND(device, group_backward_affines)(pooled, n, gamma, mean, var, eps, slope, offset, channels);
}

}  // namespace rt
