// Pooling on oneDNN (max keeps its arg-max workspace for backward), plus PyTorch's adaptive
// average pooling for sizes whose windows differ, done by hand on plain NCHW.
#include "nn/ops/pool2d.h"

#include <algorithm>

#include "nn/ops/cpu/dnnl_util.h"
#include "nn/ops/cpu/make.h"

namespace rt::cpu {
namespace {

using dims = dnnl::memory::dims;

class CpuPool2d final : public Pool2dOp {
 public:
  CpuPool2d(const Pool2dGeometry& g, const TensorSpec& x) {
    const Shape y_shape = g.output_shape(x.shape);
    const md x_md = md_of(x);
    const dnnl::algorithm alg = g.kind == PoolKind::kMax ? dnnl::algorithm::pooling_max
                                : g.count_include_pad    ? dnnl::algorithm::pooling_avg_include_padding
                                                         : dnnl::algorithm::pooling_avg_exclude_padding;
    const dims strides{g.stride_h, g.stride_w}, kernel{g.kernel_h, g.kernel_w}, pad_l{g.pad_h, g.pad_w};
    const dims pad_r{right_pad(x.shape[2], y_shape[2], g.kernel_h, g.stride_h, g.pad_h, 1),
                     right_pad(x.shape[3], y_shape[3], g.kernel_w, g.stride_w, g.pad_w, 1)};
    dnnl::pooling_forward::desc fd(dnnl::prop_kind::forward_training, alg, x_md, any_md(y_shape, x_md.data_type()),
                                   strides, kernel, pad_l, pad_r);
    auto fpd = dnnl::pooling_forward::primitive_desc(fd, engine());
    fwd_ = dnnl::pooling_forward(fpd);
    y_spec_ = spec_of(y_shape, fpd.dst_desc());
    if (g.kind == PoolKind::kMax)
      workspace_ = Tensor(plain_spec({static_cast<int64_t>(fpd.workspace_desc().get_size() / 4 + 1)}));
    ws_md_ = fpd.workspace_desc();
    dnnl::pooling_backward::desc bd(alg, x_md, fpd.dst_desc(), strides, kernel, pad_l, pad_r);
    bwd_ = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(bd, engine(), fpd));
    has_ws_ = g.kind == PoolKind::kMax;
  }

  const TensorSpec& y_spec() const override { return y_spec_; }

  void forward(const Tensor& x, Tensor& y, bool) override {
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, mem(x)}, {DNNL_ARG_DST, mem(y)}};
    if (has_ws_) args[DNNL_ARG_WORKSPACE] = mem(ws_md_, workspace_.data());
    fwd_.execute(stream(), args);
    stream().wait();
  }

  void backward(const Tensor& dy, Tensor& dx) override {
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DIFF_DST, mem(dy)}, {DNNL_ARG_DIFF_SRC, mem(dx)}};
    if (has_ws_) args[DNNL_ARG_WORKSPACE] = mem(ws_md_, workspace_.data());
    bwd_.execute(stream(), args);
    stream().wait();
  }

 private:
  TensorSpec y_spec_;
  dnnl::pooling_forward fwd_;
  dnnl::pooling_backward bwd_;
  bool has_ws_ = false;
  md ws_md_;
  Tensor workspace_;  // max pooling's arg-max indices, in oneDNN's own format
};

// PyTorch's adaptive windows: [floor(i in / out), ceil((i + 1) in / out)).
class CpuAdaptiveAvgPool final : public Pool2dOp {
 public:
  CpuAdaptiveAvgPool(int64_t out_h, int64_t out_w, const TensorSpec& x)
      : x_shape_(x.shape),
        out_h_(out_h),
        out_w_(out_w),
        y_spec_(plain_spec({x.shape[0], x.shape[1], out_h, out_w})),
        x_plain_(plain_spec(x.shape)),
        blocked_(!x.is_plain()),
        x_md_(md_of(x)) {}

  const TensorSpec& y_spec() const override { return y_spec_; }

  void forward(const Tensor& x, Tensor& y, bool) override {
    const float* src = blocked_ ? stage_in(x) : x.data();
    const int64_t H = x_shape_[2], W = x_shape_[3];
#pragma omp parallel for
    for (int64_t nc = 0; nc < x_shape_[0] * x_shape_[1]; ++nc) {
      const float* plane = src + nc * H * W;
      for (int64_t i = 0; i < out_h_; ++i)
        for (int64_t j = 0; j < out_w_; ++j) {
          const auto [h0, h1] = window(i, H, out_h_);
          const auto [w0, w1] = window(j, W, out_w_);
          double s = 0;
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) s += plane[h * W + w];
          y.data()[(nc * out_h_ + i) * out_w_ + j] = static_cast<float>(s / static_cast<double>((h1 - h0) * (w1 - w0)));
        }
    }
  }

  void backward(const Tensor& dy, Tensor& dx) override {
    const int64_t H = x_shape_[2], W = x_shape_[3];
    float* dst = blocked_ ? x_plain_.data() : dx.data();
#pragma omp parallel for
    for (int64_t nc = 0; nc < x_shape_[0] * x_shape_[1]; ++nc) {
      float* plane = dst + nc * H * W;
      std::fill(plane, plane + H * W, 0.0f);
      for (int64_t i = 0; i < out_h_; ++i)
        for (int64_t j = 0; j < out_w_; ++j) {
          const auto [h0, h1] = window(i, H, out_h_);
          const auto [w0, w1] = window(j, W, out_w_);
          const float g = dy.data()[(nc * out_h_ + i) * out_w_ + j] / static_cast<float>((h1 - h0) * (w1 - w0));
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) plane[h * W + w] += g;
        }
    }
    if (blocked_) reorder(mem(plain_md(x_shape_), x_plain_.data()), mem(dx));
  }

 private:
  static std::pair<int64_t, int64_t> window(int64_t i, int64_t in, int64_t out) {
    return {i * in / out, ((i + 1) * in + out - 1) / out};
  }
  const float* stage_in(const Tensor& x) {
    reorder(mem(x_md_, x.data()), mem(plain_md(x_shape_), x_plain_.data()));
    return x_plain_.data();
  }

  Shape x_shape_;
  int64_t out_h_, out_w_;
  TensorSpec y_spec_;
  Tensor x_plain_;  // plain copy of x (forward) or of dx (backward) when x is blocked
  bool blocked_;
  md x_md_;
};

}  // namespace

std::unique_ptr<Pool2dOp> make_pool2d(const Pool2dGeometry& g, const TensorSpec& x) {
  return std::make_unique<CpuPool2d>(g, x);
}

std::unique_ptr<Pool2dOp> make_adaptive_avg_pool2d(int64_t out_h, int64_t out_w, const TensorSpec& x) {
  if (adaptive_is_uniform(x.shape, out_h, out_w)) {
    Pool2dGeometry g;
    g.kind = PoolKind::kAvg;
    g.kernel_h = g.stride_h = x.shape[2] / out_h;
    g.kernel_w = g.stride_w = x.shape[3] / out_w;
    return std::make_unique<CpuPool2d>(g, x);
  }
  return std::make_unique<CpuAdaptiveAvgPool>(out_h, out_w, x);
}

}  // namespace rt::cpu
