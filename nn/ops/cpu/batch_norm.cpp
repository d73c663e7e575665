// Batch norm on oneDNN, on whatever layout the input has (blocked nChw16c runs ~4x faster than
// plain NCHW, see the conv study). oneDNN returns the biased batch variance; the running variance
// gets the unbiased one, as PyTorch.
#include "nn/ops/batch_norm.h"

#include <unordered_map>

#include "base/check.h"

#include "nn/ops/cpu/dnnl_util.h"
#include "nn/ops/cpu/make.h"

namespace rt::cpu {
namespace {

using flags = dnnl::normalization_flags;

class CpuBatchNorm final : public BatchNormOp {
 public:
  CpuBatchNorm(const BatchNormOptions& o, const TensorSpec& x)
      : options_(o),
        channels_(x.shape[1]),
        count_(x.shape[0] * x.shape[2] * x.shape[3]),
        mean_(plain_spec({channels_})),
        var_(plain_spec({channels_})) {
    const md x_md = md_of(x);
    const float eps = static_cast<float>(o.eps);
    // With the ReLU fused, training's forward records in a workspace where the output was
    // positive (a bit an element), and backward masks dy with it.
    const flags affine = flags::use_scale | flags::use_shift | (o.fuse_relu ? flags::fuse_norm_relu : flags::none);
    dnnl::batch_normalization_forward::desc td(dnnl::prop_kind::forward_training, x_md, eps, affine);
    train_pd_ = dnnl::batch_normalization_forward::primitive_desc(td, engine());
    train_ = dnnl::batch_normalization_forward(train_pd_);
    if (o.fuse_relu) workspace_ = dnnl::memory(train_pd_.workspace_desc(), engine());
    dnnl::batch_normalization_forward::desc id(dnnl::prop_kind::forward_inference, x_md, eps,
                                               affine | flags::use_global_stats);
    auto infer_pd = dnnl::batch_normalization_forward::primitive_desc(id, engine());
    infer_ = dnnl::batch_normalization_forward(infer_pd);
    dnnl::batch_normalization_backward::desc bd(dnnl::prop_kind::backward, x_md, x_md, eps, affine);
    bwd_ =
        dnnl::batch_normalization_backward(dnnl::batch_normalization_backward::primitive_desc(bd, engine(), train_pd_));
    if (o.fuse_relu) return;  // an inference forward leaves no workspace for its backward
    dnnl::batch_normalization_backward::desc gd(dnnl::prop_kind::backward, x_md, x_md, eps,
                                                affine | flags::use_global_stats);
    bwd_global_ =
        dnnl::batch_normalization_backward(dnnl::batch_normalization_backward::primitive_desc(gd, engine(), infer_pd));
  }

  void forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y, Tensor& running_mean,
                        Tensor& running_var) override {
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, mem(x)},      {DNNL_ARG_SCALE, mem(gamma)},
                                               {DNNL_ARG_SHIFT, mem(beta)}, {DNNL_ARG_DST, mem(y)},
                                               {DNNL_ARG_MEAN, mem(mean_)}, {DNNL_ARG_VARIANCE, mem(var_)}};
    if (options_.fuse_relu) args.emplace(DNNL_ARG_WORKSPACE, workspace_);
    train_.execute(stream(), args);
    stream().wait();
    const float m = static_cast<float>(options_.momentum);
    const float unbias = count_ > 1 ? static_cast<float>(count_) / static_cast<float>(count_ - 1) : 1.0f;
    for (int64_t c = 0; c < channels_; ++c) {
      running_mean.data()[c] = (1 - m) * running_mean.data()[c] + m * mean_.data()[c];
      running_var.data()[c] = (1 - m) * running_var.data()[c] + m * var_.data()[c] * unbias;
    }
  }

  void forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                         const Tensor& running_mean, const Tensor& running_var) override {
    infer_.execute(stream(), {{DNNL_ARG_SRC, mem(x)},
                              {DNNL_ARG_SCALE, mem(gamma)},
                              {DNNL_ARG_SHIFT, mem(beta)},
                              {DNNL_ARG_DST, mem(y)},
                              {DNNL_ARG_MEAN, mem(running_mean)},
                              {DNNL_ARG_VARIANCE, mem(running_var)}});
    stream().wait();
  }

  void backward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& dy, Tensor& dx,
                         Tensor& dgamma, Tensor& dbeta) override {
    run_backward(bwd_, x, gamma, beta, dy, dx, dgamma, dbeta, mean_, var_, workspace_);
  }

  void backward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& dy, Tensor& dx,
                          Tensor& dgamma, Tensor& dbeta, const Tensor& running_mean,
                          const Tensor& running_var) override {
    RT_CHECK(!options_.fuse_relu, "batch norm with a fused ReLU has no backward from running statistics");
    run_backward(bwd_global_, x, gamma, beta, dy, dx, dgamma, dbeta, running_mean, running_var, {});
  }

 private:
  static void run_backward(dnnl::batch_normalization_backward& prim, const Tensor& x, const Tensor& gamma,
                           const Tensor& beta, const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                           const Tensor& mean, const Tensor& var, const dnnl::memory& workspace) {
    // oneDNN 2.6 checks that SHIFT is passed whenever use_shift is set, although backward never reads it.
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, mem(x)},       {DNNL_ARG_MEAN, mem(mean)},         {DNNL_ARG_VARIANCE, mem(var)},
        {DNNL_ARG_DIFF_DST, mem(dy)}, {DNNL_ARG_SCALE, mem(gamma)},       {DNNL_ARG_SHIFT, mem(beta)},
        {DNNL_ARG_DIFF_SRC, mem(dx)}, {DNNL_ARG_DIFF_SCALE, mem(dgamma)}, {DNNL_ARG_DIFF_SHIFT, mem(dbeta)}};
    if (workspace) args.emplace(DNNL_ARG_WORKSPACE, workspace);
    prim.execute(stream(), args);
    stream().wait();
  }

  BatchNormOptions options_;
  int64_t channels_, count_;
  Tensor mean_, var_;       // (C) batch statistics saved for backward
  dnnl::memory workspace_;  // with the ReLU fused: where training's output was positive
  dnnl::batch_normalization_forward::primitive_desc train_pd_;
  dnnl::batch_normalization_forward train_, infer_;
  dnnl::batch_normalization_backward bwd_, bwd_global_;
};

}  // namespace

std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormOptions& options, const TensorSpec& x) {
  return std::make_unique<CpuBatchNorm>(options, x);
}

}  // namespace rt::cpu
