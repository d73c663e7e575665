// Flatten: a reorder to plain NCHW, after which (N, C*H*W) is only a change of shape.
#include "nn/ops/flatten.h"

#include "nn/ops/cpu/dnnl_util.h"
#include "nn/ops/cpu/make.h"

namespace rt::cpu {
namespace {

class CpuFlatten final : public FlattenOp {
 public:
  explicit CpuFlatten(const TensorSpec& x) : x_md_(md_of(x)), plain_(plain_md(x.shape)) {
    int64_t features = 1;
    for (size_t i = 1; i < x.shape.size(); ++i) features *= x.shape[i];
    y_spec_ = plain_spec({x.shape[0], features});
  }
  const TensorSpec& y_spec() const override { return y_spec_; }
  void forward(const Tensor& x, Tensor& y) override { reorder(mem(x_md_, x.data()), mem(plain_, y.data())); }
  void backward(const Tensor& dy, Tensor& dx) override { reorder(mem(plain_, dy.data()), mem(x_md_, dx.data())); }

 private:
  md x_md_, plain_;
  TensorSpec y_spec_;
};

}  // namespace

std::unique_ptr<FlattenOp> make_flatten(const TensorSpec& x) { return std::make_unique<CpuFlatten>(x); }

}  // namespace rt::cpu
