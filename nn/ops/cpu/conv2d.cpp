// Convolution on oneDNN with "any" layouts: the primitive picks activation and weight formats
// (nChw16c / OIhw16i16o on AVX-512); plain master weights are reordered in per pass, and weight
// gradients reordered out to plain (1x1 ones by ours, Note [1x1 weight reorders]). A study of the
// three models' convolutions on a 2-core Zen 4 (oneDNN 2.6, 2026-11) chose this over plain NCHW
// primitives, im2col with a GEMM, and NHWC activations; its convolutions per step, weight
// reorders included, ran 1.26x (ResNet-101), 1.31x (VGG-16) and 1.31x (Inception-v3) faster than
// PyTorch's in NCHW. With ConvAlgorithm::kWinograd, 3x3 stride-1 convolutions use oneDNN's
// F(4x4, 3x3) kernels where the CPU has them (about 2x faster on ResNet-101's 3x3 layers here).
// Under bf16 (Note [CPU bfloat16]) the activations, their gradients and the weights' per-pass
// copies are bf16, the weight and bias gradients float32; oneDNN has no bf16 Winograd, so
// kWinograd runs ours (Note [bf16 Winograd] in winograd_bf16.h) where it pays, and some 1x1
// weight gradients are a product of ours (Note [1x1 weight gradient as a product]).
#include "nn/ops/conv2d.h"

#include "nn/ops/cpu/dnnl_util.h"
#include "nn/ops/cpu/make.h"
#include "nn/ops/cpu/one_by_one_weight_gradient.h"
#include "nn/ops/cpu/winograd_bf16.h"

namespace rt::cpu {
namespace {

using dims = dnnl::memory::dims;

// The elements of a bf16 buffer, whose memory and tensor types speak of float.
uint16_t* bf16_of(const dnnl::memory& m) { return static_cast<uint16_t*>(m.get_data_handle()); }
uint16_t* bf16_of(const Tensor& t) { return reinterpret_cast<uint16_t*>(const_cast<float*>(t.data())); }

class CpuConv2d final : public Conv2dOp {
 public:
  CpuConv2d(const Conv2dGeometry& g, const TensorSpec& x, bool need_dx, ConvAlgorithm algorithm, dt compute)
      : need_dx_(need_dx) {
    const Shape y_shape = g.output_shape(x.shape);
    const bool grouped = g.groups > 1;
    const Shape w_shape =
        grouped ? Shape{g.groups, g.out_channels / g.groups, g.in_channels / g.groups, g.kernel_h, g.kernel_w}
                : g.weight_shape();
    w_plain_ = md(dims(w_shape.begin(), w_shape.end()), dt::f32, grouped ? tag::goihw : tag::oihw);
    const md x_md = md_of(x);
    const md b_md = g.bias ? plain_md({g.out_channels}) : md();
    const dims strides{g.stride_h, g.stride_w};
    const dims dil{g.dilation_h - 1, g.dilation_w - 1};
    const dims pad_l{g.pad_h, g.pad_w};
    const dims pad_r{right_pad(x.shape[2], y_shape[2], g.kernel_h, g.stride_h, g.pad_h, g.dilation_h),
                     right_pad(x.shape[3], y_shape[3], g.kernel_w, g.stride_w, g.pad_w, g.dilation_w)};
    const md w_any(dims(w_shape.begin(), w_shape.end()), compute, tag::any);
    const md dw_any(dims(w_shape.begin(), w_shape.end()), dt::f32, tag::any);
    const md x_any = any_md(x.shape, compute), y_any = any_md(y_shape, compute);

    // The primitive chooses every layout: a 1- or 3-channel input stays plain, activations come
    // out blocked; Staging reorders only where its choice differs from what the caller holds.
    // All three passes share one algorithm, since backward is hinted by the forward descriptor.
    auto plan_passes = [&](dnnl::algorithm alg) {
      dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, alg, x_any, w_any, b_md, y_any, strides,
                                         dil, pad_l, pad_r);
      fwd_pd_ = dnnl::convolution_forward::primitive_desc(fd, engine());
      dnnl::convolution_backward_weights::desc wd(alg, x_any, dw_any, b_md, y_any, strides, dil, pad_l, pad_r);
      bww_pd_ = dnnl::convolution_backward_weights::primitive_desc(wd, engine(), fwd_pd_);
      if (need_dx_) {
        dnnl::convolution_backward_data::desc dd(alg, x_any, w_any, y_any, strides, dil, pad_l, pad_r);
        bwd_pd_ = dnnl::convolution_backward_data::primitive_desc(dd, engine(), fwd_pd_);
      }
    };
    const bool winograd_shape = g.kernel_h == 3 && g.kernel_w == 3 && g.stride_h == 1 && g.stride_w == 1 &&
                                g.dilation_h == 1 && g.dilation_w == 1 && !grouped;
    if (algorithm == ConvAlgorithm::kWinograd && winograd_shape) {
      try {
        plan_passes(dnnl::algorithm::convolution_winograd);
        algorithm_ = ConvAlgorithm::kWinograd;
      } catch (const dnnl::error&) {
        // oneDNN has Winograd only on some CPUs (AVX-512) and channel counts: direct it is.
      }
    }
    if (algorithm_ == ConvAlgorithm::kDirect) plan_passes(dnnl::algorithm::convolution_direct);

    fwd_ = dnnl::convolution_forward(fwd_pd_);
    y_spec_ = spec_of(y_shape, fwd_pd_.dst_desc());
    x_fwd_ = Staging(x_md, fwd_pd_.src_desc(), 0);
    w_fwd_ = Staging(w_plain_, fwd_pd_.weights_desc(), 1);

    const md nchw16c_x(dims(x.shape.begin(), x.shape.end()), dt::bf16, tag::nChw16c);
    const md nchw16c_y(dims(y_shape.begin(), y_shape.end()), dt::bf16, tag::nChw16c);
    const bool one_by_one = g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 &&
                            g.pad_w == 0 && !grouped && !g.bias;
    if (compute == dt::bf16 && one_by_one && x_md == nchw16c_x && fwd_pd_.dst_desc() == nchw16c_y &&
        OneByOneWeightGradient::pays(g.in_channels, g.out_channels, x.shape[2] * x.shape[3]) &&
        OneByOneWeightGradient::runs(g.in_channels, g.out_channels))
      weight_product_ =
          std::make_unique<OneByOneWeightGradient>(x.shape[0], g.in_channels, g.out_channels, x.shape[2] * x.shape[3]);
    if (!weight_product_) {  // oneDNN's kernel and its stagings only where it runs
      bww_ = dnnl::convolution_backward_weights(bww_pd_);
      x_bww_ = Staging(x_md, bww_pd_.src_desc(), 0);
      dy_bww_ = Staging(fwd_pd_.dst_desc(), bww_pd_.diff_dst_desc(), 1);
      dw_out_ = Staging(w_plain_, bww_pd_.diff_weights_desc(), 2);
    }

    if (need_dx_) {
      bwd_ = dnnl::convolution_backward_data(bwd_pd_);
      w_bwd_ = Staging(w_plain_, bwd_pd_.weights_desc(), 0);
      dy_bwd_ = Staging(fwd_pd_.dst_desc(), bwd_pd_.diff_dst_desc(), 1);
      dx_out_ = Staging(x_md, bwd_pd_.diff_src_desc(), 2);
    }
  }

  const TensorSpec& y_spec() const override { return y_spec_; }
  ConvAlgorithm algorithm() const override { return algorithm_; }

  void forward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) override {
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, x_fwd_.in(mem(x))},
                                               {DNNL_ARG_WEIGHTS, w_fwd_.in(mem(w_plain_, w.data()))},
                                               {DNNL_ARG_DST, mem(y)}};
    if (b) args[DNNL_ARG_BIAS] = mem(*b);
    fwd_.execute(stream(), args);
    stream().wait();
  }

  void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    RT_ASSERT(need_dx_);
    dnnl::memory dx_mem = mem(dx);
    dnnl::memory target = dx_out_.target(dx_mem);
    bwd_.execute(stream(), {{DNNL_ARG_DIFF_DST, dy_bwd_.in(mem(dy))},
                            {DNNL_ARG_WEIGHTS, w_bwd_.in(mem(w_plain_, w.data()))},
                            {DNNL_ARG_DIFF_SRC, target}});
    stream().wait();
    dx_out_.out(dx_mem);
  }

  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* db) override {
    if (weight_product_) {  // Note [1x1 weight gradient as a product]; no bias by construction
      (*weight_product_)(bf16_of(x), bf16_of(dy), dw.data());
      return;
    }
    dnnl::memory dw_mem = mem(w_plain_, dw.data());
    dnnl::memory dw_target = dw_out_.target(dw_mem);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, x_bww_.in(mem(x))},
                                               {DNNL_ARG_DIFF_DST, dy_bww_.in(mem(dy))},
                                               {DNNL_ARG_DIFF_WEIGHTS, dw_target}};
    if (db) args[DNNL_ARG_DIFF_BIAS] = mem(*db);
    bww_.execute(stream(), args);
    stream().wait();
    dw_out_.out(dw_mem);
  }

 private:
  bool need_dx_;
  ConvAlgorithm algorithm_ = ConvAlgorithm::kDirect;
  md w_plain_;
  TensorSpec y_spec_;
  dnnl::convolution_forward::primitive_desc fwd_pd_;
  dnnl::convolution_forward fwd_;
  dnnl::convolution_backward_data::primitive_desc bwd_pd_;
  dnnl::convolution_backward_data bwd_;
  dnnl::convolution_backward_weights::primitive_desc bww_pd_;
  dnnl::convolution_backward_weights bww_;
  Staging x_fwd_, w_fwd_, x_bww_, dy_bww_, dw_out_, w_bwd_, dy_bwd_, dx_out_;
  std::unique_ptr<OneByOneWeightGradient> weight_product_;  // in place of bww_ where it runs
};

// A 3x3 convolution through our bf16 Winograd (Note [bf16 Winograd] in winograd_bf16.h), on
// activations in nChw16c bf16; x and dx are reordered where the caller holds another layout.
class CpuWinogradBf16Conv2d final : public Conv2dOp {
 public:
  CpuWinogradBf16Conv2d(const WinogradBf16Shape& s, const TensorSpec& x, bool need_dx)
      : kernel_(s),
        x_md_(md_of(x)),
        blocked_(md({s.n, s.c, s.h, s.w}, dt::bf16, tag::nChw16c)),
        y_spec_(spec_of({s.n, s.k, s.h, s.w}, md({s.n, s.k, s.h, s.w}, dt::bf16, tag::nChw16c))),
        x_in_(x_md_, blocked_, 0),
        dx_out_(x_md_, blocked_, 2),
        need_dx_(need_dx) {}

  const TensorSpec& y_spec() const override { return y_spec_; }
  ConvAlgorithm algorithm() const override { return ConvAlgorithm::kWinograd; }

  void forward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) override {
    kernel_.forward(bf16_of(x_in_.in(mem(x))), w.data(), b ? b->data() : nullptr, bf16_of(y));
  }

  void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    RT_ASSERT(need_dx_);
    dnnl::memory dx_mem = mem(dx);
    dnnl::memory target = dx_out_.target(dx_mem);
    kernel_.backward_data(bf16_of(dy), w.data(), bf16_of(target));
    dx_out_.out(dx_mem);
  }

  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* db) override {
    kernel_.backward_weights(bf16_of(x_in_.in(mem(x))), bf16_of(dy), dw.data(), db ? db->data() : nullptr);
  }

 private:
  WinogradBf16 kernel_;
  md x_md_, blocked_;
  TensorSpec y_spec_;
  Staging x_in_, dx_out_;
  bool need_dx_;
};

// Where bf16 Winograd is asked for, runs on this CPU, fits the geometry and pays for its shape.
bool takes_winograd_bf16(const Conv2dGeometry& g, const Shape& x, const PlanContext& plan) {
  if (plan.precision != Precision::kBf16 || plan.conv_algorithm != ConvAlgorithm::kWinograd) return false;
  const bool fits = g.kernel_h == 3 && g.kernel_w == 3 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 1 &&
                    g.pad_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 && g.groups == 1 &&
                    g.in_channels % 16 == 0 && g.out_channels % 16 == 0;
  return fits && winograd_bf16_pays({x[0], g.in_channels, g.out_channels, x[2], x[3]}) && winograd_bf16_runs();
}

}  // namespace

std::unique_ptr<Conv2dOp> make_conv2d(const Conv2dGeometry& g, const TensorSpec& x, bool need_dx,
                                      const PlanContext& plan) {
  if (takes_winograd_bf16(g, x.shape, plan))
    return std::make_unique<CpuWinogradBf16Conv2d>(
        WinogradBf16Shape{x.shape[0], g.in_channels, g.out_channels, x.shape[2], x.shape[3]}, x, need_dx);
  return std::make_unique<CpuConv2d>(g, x, need_dx, plan.conv_algorithm, compute_dt(plan.precision));
}

}  // namespace rt::cpu
