#include "nn/ops/cpu/dnnl_util.h"

#include <sstream>

#include "nn/ops/cpu/shared_scratch.h"

namespace rt::cpu {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  static dnnl::stream s(engine());
  return s;
}

bool DnnlLayout::same_as(const Layout& other) const {
  auto* o = dynamic_cast<const DnnlLayout*>(&other);
  return o && o->desc_ == desc_;
}

std::string DnnlLayout::describe() const {
  // Name the blocking like oneDNN's verbose mode does: dims a,b,c..., inner blocks appended.
  const dnnl_memory_desc_t& c = desc_.data;
  if (c.format_kind != dnnl_blocked) return "oneDNN-opaque";
  const auto& blk = c.format_desc.blocking;
  std::string outer;
  std::vector<std::pair<int, int64_t>> order;
  for (int i = 0; i < c.ndims; ++i) order.push_back({i, blk.strides[i]});
  std::stable_sort(order.begin(), order.end(), [](auto& x, auto& y) { return x.second > y.second; });
  for (auto& [dim, stride] : order) {
    bool blocked = false;
    for (int b = 0; b < blk.inner_nblks; ++b) blocked |= blk.inner_idxs[b] == dim;
    outer += static_cast<char>((blocked ? 'A' : 'a') + dim);
  }
  std::ostringstream os;
  os << outer;
  for (int b = 0; b < blk.inner_nblks; ++b) os << blk.inner_blks[b] << static_cast<char>('a' + blk.inner_idxs[b]);
  if (desc_.data_type() == dt::bf16) os << " bf16";
  return os.str();
}

md plain_md(const Shape& shape, dt type) {
  static const tag tags[] = {tag::undef, tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde};
  RT_CHECK(!shape.empty() && shape.size() <= 5, "tensor of rank ", shape.size(), " is not supported on the CPU");
  return md(dnnl::memory::dims(shape.begin(), shape.end()), type, tags[shape.size()]);
}

dt dt_of(const TensorSpec& spec) { return md_of(spec).data_type(); }

dt compute_dt(Precision precision) { return precision == Precision::kBf16 ? dt::bf16 : dt::f32; }

md md_of(const TensorSpec& spec) {
  if (spec.is_plain()) return plain_md(spec.shape);
  auto* l = dynamic_cast<const DnnlLayout*>(spec.layout.get());
  RT_CHECK(l != nullptr, "tensor ", spec.describe(), " has a layout the CPU backend did not make");
  return l->desc();
}

TensorSpec spec_of(const Shape& shape, const md& desc) {
  if (desc == plain_md(shape)) return plain_spec(shape);
  return TensorSpec{shape, std::make_shared<DnnlLayout>(desc), Device::kCpu};
}

md any_md(const Shape& shape, dt type) { return md(dnnl::memory::dims(shape.begin(), shape.end()), type, tag::any); }

dnnl::memory mem(const md& desc, const float* data) { return dnnl::memory(desc, engine(), const_cast<float*>(data)); }

dnnl::memory mem(const Tensor& t) { return mem(md_of(t.spec()), t.data()); }

void reorder(const dnnl::memory& src, const dnnl::memory& dst) {
  dnnl::reorder(src, dst).execute(stream(), const_cast<dnnl::memory&>(src), const_cast<dnnl::memory&>(dst));
  stream().wait();
}

namespace {

ScratchUse staging_slot(int slot) {
  RT_ASSERT(slot >= 0 && slot < kStagingSlots);
  return static_cast<ScratchUse>(static_cast<int>(ScratchUse::kStaging0) + slot);
}

}  // namespace

Staging::Staging(const md& have, const md& want, int slot)
    : needed_(have != want),
      slot_(slot),
      want_(want),
      fast_in_(WeightReorder::between(have, want)),
      fast_out_(WeightReorder::between(want, have)) {
  if (needed_) reserve_scratch(staging_slot(slot), want.get_size());
}

float* Staging::buffer() const { return scratch_as<float>(staging_slot(slot_)); }

dnnl::memory Staging::in(const dnnl::memory& src) {
  if (!needed_) return src;
  dnnl::memory staged = mem(want_, buffer());
  if (fast_in_)
    fast_in_(src.get_data_handle(), buffer());
  else
    reorder(src, staged);
  return staged;
}

dnnl::memory Staging::target(const dnnl::memory& dst) { return needed_ ? mem(want_, buffer()) : dst; }

void Staging::out(const dnnl::memory& dst) {
  if (!needed_) return;
  if (fast_out_)
    fast_out_(buffer(), dst.get_data_handle());
  else
    reorder(mem(want_, buffer()), dst);
}

int64_t right_pad(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad_left, int64_t dilation) {
  return (out - 1) * stride + (kernel - 1) * dilation + 1 - in - pad_left;
}

}  // namespace rt::cpu
