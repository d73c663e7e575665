// How the CUDA backend stores an activation: element type and memory format. Plain C++ (no CUDA
// types), so layouts, sizes and index arithmetic are tested on machines without a GPU.
//
// Note [Mixed precision]: with train.precision = "bf16" or "fp16" every convolution writes its
// output, and reads its output's gradient, in 16 bits in NHWC, the layout cuDNN's tensor-core
// kernels want. The ops that follow a convolution (batch norm, ReLU, pooling, add, concat, dropout)
// keep their input's layout, so activations stay 16-bit NHWC from one convolution to the next;
// every sum inside them is formed in float32. Flatten returns to plain float32 (in PyTorch's
// (C, H, W) order), so the fully connected layers (TF32 on tensor cores) and the loss see float32.
// Parameters, their gradients and the optimizer stay float32 ("master weights"): a convolution
// rounds its weights to 16 bits when it runs and widens its weight gradient back to float32.
// fp16 spans only 6e-8 to 65504, so its gradients are scaled by a dynamic loss scale (see
// nn/optim/loss_scale.h); bf16 has float32's range and needs none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/host_device.h"
#include "nn/device.h"
#include "nn/plan_context.h"
#include "nn/tensor.h"

namespace rt::cuda {

enum class DType { kF32, kBf16, kF16 };
enum class Format { kNchw, kNhwc };

inline size_t dtype_bytes(DType t) { return t == DType::kF32 ? 4 : 2; }
const char* dtype_name(DType t);  // "f32", "bf16", "f16"

// The activation type of a precision: 16 bits for bf16 / fp16, else float32.
DType activation_dtype(Precision p);

// A GPU tensor that is not plain float32 NCHW: a 4-D shape in 16 bits and/or NHWC.
class GpuLayout final : public Layout {
 public:
  GpuLayout(int64_t elements, DType dtype, Format format) : elements_(elements), dtype_(dtype), format_(format) {}
  size_t bytes() const override { return static_cast<size_t>(elements_) * dtype_bytes(dtype_); }
  bool same_as(const Layout& other) const override;
  std::string describe() const override;  // "nhwc bf16"
  DType dtype() const { return dtype_; }
  Format format() const { return format_; }

 private:
  int64_t elements_;
  DType dtype_;
  Format format_;
};

// The spec of a GPU tensor of `shape` (4-D unless plain) in `dtype` and `format`: plain_spec for
// float32 NCHW, so the common case stays the plain one every other op accepts.
TensorSpec gpu_spec(const Shape& shape, DType dtype, Format format);
// What a GPU spec holds: plain specs are float32 NCHW. rt::Error for a layout of another backend.
DType dtype_of(const TensorSpec& spec);
Format format_of(const TensorSpec& spec);

// Element offset of (n, c, h, w) in an (N, C, H, W) tensor stored in `format`.
// I: int64_t, or int32_t where the tensor's size fits (cheaper division on the GPU).
template <typename I>
RT_HD inline I element_offset(Format format, I C, I H, I W, I n, I c, I h, I w) {
  return format == Format::kNhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

// Calls f with a tag (a null pointer) of the index type a kernel over `largest` elements takes:
// int32_t where every offset, plus a grid stride (< 2^29, see blocks_for), fits in one.
template <typename F>
void with_index_type(int64_t largest, F&& f) {
  if (largest < (int64_t{1} << 30)) {
    f(static_cast<int32_t*>(nullptr));
  } else {
    f(static_cast<int64_t*>(nullptr));
  }
}

// The (n, c, h, w) of element offset `at` in `format`: element_offset's inverse.
template <typename I>
struct BasicIndex4 {
  I n, c, h, w;
};
using Index4 = BasicIndex4<int64_t>;
template <typename I>
RT_HD inline BasicIndex4<I> element_index(Format format, I C, I H, I W, I at) {
  if (format == Format::kNhwc) return {at / (H * W * C), at % C, at / (W * C) % H, at / C % W};
  return {at / (C * H * W), at / (H * W) % C, at / W % H, at % W};
}

// The offset of the i-th element of channel c in an (N, C, H, W) tensor with HW = H * W (i over
// (n, h, w) in that order).
RT_HD inline int64_t channel_element(Format format, int64_t C, int64_t HW, int64_t c, int64_t i) {
  return format == Format::kNhwc ? i * C + c : (i / HW * C + c) * HW + i % HW;
}

}  // namespace rt::cuda
