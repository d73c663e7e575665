// ReLU through oneDNN eltwise, on the input's own layout; backward from the output
// (eltwise_relu_use_dst_for_bwd), so forward may overwrite its input.
#include "nn/ops/relu.h"

#include "nn/ops/cpu/dnnl_util.h"
#include "nn/ops/cpu/make.h"

namespace rt::cpu {
namespace {

class CpuRelu final : public ReluOp {
 public:
  explicit CpuRelu(const TensorSpec& x) {
    const md x_md = md_of(x);
    const auto relu = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
    dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, relu, x_md, 0.f);
    auto fpd = dnnl::eltwise_forward::primitive_desc(fd, engine());
    fwd_ = dnnl::eltwise_forward(fpd);
    dnnl::eltwise_backward::desc bd(relu, x_md, x_md, 0.f);
    bwd_ = dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(bd, engine(), fpd));
  }
  void forward(const Tensor& x, Tensor& y) override {
    fwd_.execute(stream(), {{DNNL_ARG_SRC, mem(x)}, {DNNL_ARG_DST, mem(y)}});
    stream().wait();
  }
  void backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
    bwd_.execute(stream(), {{DNNL_ARG_DST, mem(y)}, {DNNL_ARG_DIFF_DST, mem(dy)}, {DNNL_ARG_DIFF_SRC, mem(dx)}});
    stream().wait();
  }

 private:
  dnnl::eltwise_forward fwd_;
  dnnl::eltwise_backward bwd_;
};

}  // namespace

std::unique_ptr<ReluOp> make_relu(const TensorSpec& x) { return std::make_unique<CpuRelu>(x); }

}  // namespace rt::cpu
