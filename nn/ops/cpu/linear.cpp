// Fully connected through oneDNN inner product on plain (N, I) x (O, I): one threading runtime
// (oneDNN's OpenMP) for the whole step, never a pthreaded BLAS beside it (see the conv study).
#include "nn/ops/linear.h"

#include "nn/ops/cpu/dnnl_util.h"
#include "nn/ops/cpu/make.h"

namespace rt::cpu {
namespace {

class CpuLinear final : public LinearOp {
 public:
  CpuLinear(int64_t n, int64_t in, int64_t out, bool bias, bool need_dx) {
    const md x_md = plain_md({n, in}), w_md = plain_md({out, in}), y_md = plain_md({n, out});
    const md b_md = bias ? plain_md({out}) : md();
    dnnl::inner_product_forward::desc fd(dnnl::prop_kind::forward_training, x_md, w_md, b_md, y_md);
    auto fpd = dnnl::inner_product_forward::primitive_desc(fd, engine());
    fwd_ = dnnl::inner_product_forward(fpd);
    dnnl::inner_product_backward_weights::desc wd(x_md, w_md, b_md, y_md);
    bww_ =
        dnnl::inner_product_backward_weights(dnnl::inner_product_backward_weights::primitive_desc(wd, engine(), fpd));
    if (need_dx) {
      dnnl::inner_product_backward_data::desc dd(x_md, w_md, y_md);
      bwd_ = dnnl::inner_product_backward_data(dnnl::inner_product_backward_data::primitive_desc(dd, engine(), fpd));
    }
  }

  void forward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) override {
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, mem(x)}, {DNNL_ARG_WEIGHTS, mem(w)}, {DNNL_ARG_DST, mem(y)}};
    if (b) args[DNNL_ARG_BIAS] = mem(*b);
    fwd_.execute(stream(), args);
    stream().wait();
  }

  void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    bwd_.execute(stream(), {{DNNL_ARG_DIFF_DST, mem(dy)}, {DNNL_ARG_WEIGHTS, mem(w)}, {DNNL_ARG_DIFF_SRC, mem(dx)}});
    stream().wait();
  }

  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* db) override {
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, mem(x)}, {DNNL_ARG_DIFF_DST, mem(dy)}, {DNNL_ARG_DIFF_WEIGHTS, mem(dw)}};
    if (db) args[DNNL_ARG_DIFF_BIAS] = mem(*db);
    bww_.execute(stream(), args);
    stream().wait();
  }

 private:
  dnnl::inner_product_forward fwd_;
  dnnl::inner_product_backward_data bwd_;
  dnnl::inner_product_backward_weights bww_;
};

}  // namespace

std::unique_ptr<LinearOp> make_linear(int64_t batch, int64_t in_features, int64_t out_features, bool bias, bool need_dx,
                                      const PlanContext&) {
  return std::make_unique<CpuLinear>(batch, in_features, out_features, bias, need_dx);
}

}  // namespace rt::cpu
