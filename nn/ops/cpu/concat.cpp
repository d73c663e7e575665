// Channel concatenation on oneDNN; backward copies each input's channel slice of dy out through a
// sub-memory view. Where the output's blocking does not split at an input's channel offset, the
// slice is taken from a plain copy of dy instead.
#include "nn/ops/concat.h"

#include "nn/ops/cpu/dnnl_util.h"
#include "nn/ops/cpu/make.h"

namespace rt::cpu {
namespace {

using dims = dnnl::memory::dims;

class CpuConcat final : public ConcatOp {
 public:
  explicit CpuConcat(const std::vector<TensorSpec>& xs) {
    std::vector<md> srcs;
    int64_t channels = 0;
    for (const TensorSpec& x : xs) {
      srcs.push_back(md_of(x));
      channels += x.shape[1];
    }
    Shape y_shape = xs[0].shape;
    y_shape[1] = channels;
    auto pd = dnnl::concat::primitive_desc(1, srcs, engine());
    fwd_ = dnnl::concat(pd);
    const md y_md = pd.dst_desc();
    y_spec_ = spec_of(y_shape, y_md);

    // Slices of dy for backward: straight from dy's layout if it allows, else from a plain copy.
    int64_t offset = 0;
    bool views_ok = true;
    for (const TensorSpec& x : xs) {
      try {
        slices_.push_back(
            y_md.submemory_desc(dims{x.shape[0], x.shape[1], x.shape[2], x.shape[3]}, dims{0, offset, 0, 0}));
      } catch (const dnnl::error&) {
        views_ok = false;
      }
      offset += x.shape[1];
    }
    if (!views_ok) {
      slices_.clear();
      dy_plain_ = Tensor(plain_spec(y_shape));
      offset = 0;
      for (const TensorSpec& x : xs) {
        slices_.push_back(plain_md(y_shape).submemory_desc(dims{x.shape[0], x.shape[1], x.shape[2], x.shape[3]},
                                                           dims{0, offset, 0, 0}));
        offset += x.shape[1];
      }
    }
    y_md_ = y_md;
  }

  const TensorSpec& y_spec() const override { return y_spec_; }

  void forward(const std::vector<const Tensor*>& xs, Tensor& y) override {
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DST, mem(y)}};
    for (size_t i = 0; i < xs.size(); ++i) args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = mem(*xs[i]);
    fwd_.execute(stream(), args);
    stream().wait();
  }

  void backward(const Tensor& dy, const std::vector<Tensor*>& dxs) override {
    const float* base = dy.data();
    if (dy_plain_.defined() && dy_plain_.bytes() > 0) {
      reorder(mem(y_md_, dy.data()), mem(dy_plain_));
      base = dy_plain_.data();
    }
    for (size_t i = 0; i < dxs.size(); ++i)
      if (dxs[i]) reorder(mem(slices_[i], base), mem(*dxs[i]));
  }

 private:
  TensorSpec y_spec_;
  md y_md_;
  dnnl::concat fwd_;
  std::vector<md> slices_;  // input i's channels within dy (or within dy_plain_)
  Tensor dy_plain_;         // only when dy's blocking cannot be sliced at the inputs' offsets
};

}  // namespace

std::unique_ptr<ConcatOp> make_concat(const std::vector<TensorSpec>& xs) { return std::make_unique<CpuConcat>(xs); }

}  // namespace rt::cpu
