// Fully connected through oneDNN inner product on plain (N, I) x (O, I): one threading runtime
// (oneDNN's OpenMP) for the whole step, never a pthreaded BLAS beside it (see the conv study).
// Under bf16 (Note [CPU bfloat16]) the product reads bf16 copies of x, w and dy (as PyTorch's
// autocast does) and accumulates in float32; y, dx, dw and db stay float32, so logits and the
// loss are float32. The forward's copy of w is kept for backward_data, as PyTorch's autograd keeps
// autocast's cast: the weights are copied once a step, not twice. The copy is plain (O, I) bf16,
// not the blocked layout the primitive would pick: for VGG-16's 4096 x 25088 weight on a 2-core
// Zen 4 (oneDNN 2.6) the copy took 19 ms plain against 49 ms blocked, and the copy and both
// products 52 ms against 74 at batch 8, 103 against 127 at batch 64.
#include "nn/ops/linear.h"

#include "nn/ops/cpu/dnnl_util.h"
#include "nn/ops/cpu/make.h"

namespace rt::cpu {
namespace {

class CpuLinear final : public LinearOp {
 public:
  CpuLinear(int64_t n, int64_t in, int64_t out, bool bias, bool need_dx, dt compute) : need_dx_(need_dx) {
    const md x_md = plain_md({n, in}), w_md = plain_md({out, in}), y_md = plain_md({n, out});
    const md b_md = bias ? plain_md({out}) : md();
    const md x_in = plain_md({n, in}, compute), y_c = plain_md({n, out}, compute);
    // Both products read w plain: float32 its own weights, bf16 the forward's copy, in a buffer of
    // this layer's own, which outlives the call.
    w_c_ = plain_md({out, in}, compute);
    dnnl::inner_product_forward::desc fd(dnnl::prop_kind::forward_training, x_in, w_c_, b_md, y_md);
    auto fpd = dnnl::inner_product_forward::primitive_desc(fd, engine());
    fwd_ = dnnl::inner_product_forward(fpd);
    x_fwd_ = Staging(x_md, fpd.src_desc(), 0);
    RT_ASSERT(fpd.weights_desc() == w_c_);
    copies_w_ = compute != dt::f32;
    if (copies_w_) w_copy_ = Tensor(plain_spec({static_cast<int64_t>((w_c_.get_size() + 3) / 4)}));
    dnnl::inner_product_backward_weights::desc wd(x_in, w_md, b_md, y_c);
    auto wpd = dnnl::inner_product_backward_weights::primitive_desc(wd, engine(), fpd);
    bww_ = dnnl::inner_product_backward_weights(wpd);
    x_bww_ = Staging(x_md, wpd.src_desc(), 0);
    dy_bww_ = Staging(y_md, wpd.diff_dst_desc(), 1);
    if (need_dx) {
      dnnl::inner_product_backward_data::desc dd(x_md, w_c_, y_c);
      auto dpd = dnnl::inner_product_backward_data::primitive_desc(dd, engine(), fpd);
      bwd_ = dnnl::inner_product_backward_data(dpd);
      RT_ASSERT(dpd.weights_desc() == w_c_);
      dy_bwd_ = Staging(y_md, dpd.diff_dst_desc(), 0);
    }
  }

  void forward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) override {
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, x_fwd_.in(mem(x))}, {DNNL_ARG_WEIGHTS, weights(w, true)}, {DNNL_ARG_DST, mem(y)}};
    if (b) args[DNNL_ARG_BIAS] = mem(*b);
    fwd_.execute(stream(), args);
    stream().wait();
  }

  // Under bf16 reads the copy of w the last forward made.
  void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    RT_ASSERT(need_dx_);
    bwd_.execute(stream(), {{DNNL_ARG_DIFF_DST, dy_bwd_.in(mem(dy))},
                            {DNNL_ARG_WEIGHTS, weights(w, false)},
                            {DNNL_ARG_DIFF_SRC, mem(dx)}});
    stream().wait();
  }

  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* db) override {
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, x_bww_.in(mem(x))}, {DNNL_ARG_DIFF_DST, dy_bww_.in(mem(dy))}, {DNNL_ARG_DIFF_WEIGHTS, mem(dw)}};
    if (db) args[DNNL_ARG_DIFF_BIAS] = mem(*db);
    bww_.execute(stream(), args);
    stream().wait();
  }

 private:
  // w as the products read it: itself under float32; else its bf16 copy, made now when `copy`.
  dnnl::memory weights(const Tensor& w, bool copy) {
    if (!copies_w_) return mem(w);
    dnnl::memory copied = mem(w_c_, w_copy_.data());
    if (copy) reorder(mem(w), copied);
    return copied;
  }

  bool need_dx_, copies_w_;
  md w_c_;
  Tensor w_copy_;
  dnnl::inner_product_forward fwd_;
  dnnl::inner_product_backward_data bwd_;
  dnnl::inner_product_backward_weights bww_;
  Staging x_fwd_, x_bww_, dy_bww_, dy_bwd_;
};

}  // namespace

std::unique_ptr<LinearOp> make_linear(int64_t batch, int64_t in_features, int64_t out_features, bool bias, bool need_dx,
                                      const PlanContext& plan) {
  return std::make_unique<CpuLinear>(batch, in_features, out_features, bias, need_dx, compute_dt(plan.precision));
}

}  // namespace rt::cpu
