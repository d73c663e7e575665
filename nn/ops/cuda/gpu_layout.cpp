#include "nn/ops/cuda/gpu_layout.h"

#include <memory>

#include "base/check.h"

namespace rt::cuda {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kBf16:
      return "bf16";
    case DType::kF16:
      return "f16";
  }
  return "?";
}

DType activation_dtype(Precision p) {
  if (p == Precision::kBf16) return DType::kBf16;
  if (p == Precision::kFp16) return DType::kF16;
  return DType::kF32;
}

bool GpuLayout::same_as(const Layout& other) const {
  const auto* o = dynamic_cast<const GpuLayout*>(&other);
  return o && o->elements_ == elements_ && o->dtype_ == dtype_ && o->format_ == format_;
}

std::string GpuLayout::describe() const {
  return str_cat(format_ == Format::kNhwc ? "nhwc " : "nchw ", dtype_name(dtype_));
}

TensorSpec gpu_spec(const Shape& shape, DType dtype, Format format) {
  if (dtype == DType::kF32 && format == Format::kNchw) return plain_spec(shape, Device::kCuda);
  RT_CHECK(shape.size() == 4, "a ", dtype_name(dtype), format == Format::kNhwc ? " nhwc" : "",
           " GPU tensor must be (N, C, H, W), got ", shape_str(shape));
  return TensorSpec{shape, std::make_shared<GpuLayout>(numel(shape), dtype, format), Device::kCuda};
}

namespace {

const GpuLayout* gpu_layout(const TensorSpec& spec) {
  if (spec.is_plain()) return nullptr;
  const auto* l = dynamic_cast<const GpuLayout*>(spec.layout.get());
  RT_CHECK(l != nullptr, "a GPU op got a tensor in another backend's layout: ", spec.describe());
  return l;
}

}  // namespace

DType dtype_of(const TensorSpec& spec) {
  const GpuLayout* l = gpu_layout(spec);
  return l ? l->dtype() : DType::kF32;
}

Format format_of(const TensorSpec& spec) {
  const GpuLayout* l = gpu_layout(spec);
  return l ? l->format() : Format::kNchw;
}

}  // namespace rt::cuda
