// oneDNN plumbing shared by the CPU ops: the engine and stream, the Layout that carries a oneDNN
// memory descriptor, and conversions between TensorSpec and dnnl::memory::desc. Nothing outside
// nn/ops/cpu/ includes this file.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <string>

#include "base/check.h"
#include "base/run_settings.h"
#include "nn/ops/cpu/weight_reorders.h"
#include "nn/tensor.h"

namespace rt::cpu {

using md = dnnl::memory::desc;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::engine& engine();
dnnl::stream& stream();

// A layout chosen by a oneDNN primitive.
class DnnlLayout final : public Layout {
 public:
  explicit DnnlLayout(md desc) : desc_(std::move(desc)) {}
  const md& desc() const { return desc_; }
  size_t bytes() const override { return desc_.get_size(); }
  bool same_as(const Layout& other) const override;
  std::string describe() const override;

 private:
  md desc_;
};

// The plain row-major descriptor for a shape (a, ab, abc, abcd, abcde).
md plain_md(const Shape& shape, dt type = dt::f32);
// The descriptor behind a spec: its oneDNN layout, or plain float32.
md md_of(const TensorSpec& spec);
// The element type a spec holds: plain specs are float32.
dt dt_of(const TensorSpec& spec);
// A spec for `shape` in layout `desc`; plain float32 descriptors give a plain spec (layout nullptr).
TensorSpec spec_of(const Shape& shape, const md& desc);
// md with "any" format for a shape: lets the primitive choose.
md any_md(const Shape& shape, dt type = dt::f32);
// What convolutions and matrix products compute in under `precision` (Note [CPU bfloat16]):
// bf16 for bf16, float32 for the rest.
dt compute_dt(Precision precision);

dnnl::memory mem(const md& desc, const float* data);
dnnl::memory mem(const Tensor& t);

// A buffer a primitive needs in a layout its caller does not provide, only when the two layouts
// differ. Its contents live only inside one op call, so every Staging of the same `slot` shares
// one buffer (Note [Shared scratch] in shared_scratch.h); an op gives the Stagings it uses within
// one call distinct slots (0 to kStagingSlots - 1).
inline constexpr int kStagingSlots = 3;
class Staging {
 public:
  Staging() = default;
  Staging(const md& have, const md& want, int slot);
  bool needed() const { return needed_; }
  const md& want() const { return want_; }
  // Returns memory in `want`: `src` itself, or a reordered copy of it.
  dnnl::memory in(const dnnl::memory& src);
  // Memory in `want` to write into; call out() afterwards to move it to `dst`.
  dnnl::memory target(const dnnl::memory& dst);
  void out(const dnnl::memory& dst);

 private:
  float* buffer() const;

  bool needed_ = false;
  int slot_ = 0;
  md want_;
  // Ours in place of oneDNN's reorder, for 1x1 weights (Note [1x1 weight reorders]).
  WeightReorder fast_in_, fast_out_;
};

void reorder(const dnnl::memory& src, const dnnl::memory& dst);

// Asymmetric right padding that makes oneDNN produce PyTorch's floor-mode output size.
int64_t right_pad(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad_left, int64_t dilation);

}  // namespace rt::cpu
