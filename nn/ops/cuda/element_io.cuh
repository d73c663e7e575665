// One element of a GPU tensor in any DType, read and written as float: kernels are templated on
// the storage type T (float, Bf16, F16) and do their arithmetic in float32. The 16-bit rounding is
// base/half_float.h's, which the CPU tests check bit for bit.
#pragma once

#include <cstdint>
#include <type_traits>

#include "base/check.h"
#include "base/half_float.h"
#include "nn/ops/cuda/gpu_layout.h"

namespace rt::cuda {

struct Bf16 {
  uint16_t bits;
};
struct F16 {
  uint16_t bits;
};

RT_HD inline float load(const float* p) { return *p; }
RT_HD inline float load(const Bf16* p) { return bf16_to_float(p->bits); }
RT_HD inline float load(const F16* p) { return fp16_to_float(p->bits); }
RT_HD inline void store(float* p, float v) { *p = v; }
RT_HD inline void store(Bf16* p, float v) { p->bits = float_to_bf16(v); }
RT_HD inline void store(F16* p, float v) { p->bits = float_to_fp16(v); }

// Calls fn(T*) with a null pointer of the storage type of `t`: the generic lambda then launches
// its kernel for that T.
template <typename Fn>
void with_storage(DType t, Fn&& fn) {
  switch (t) {
    case DType::kF32:
      return fn(static_cast<float*>(nullptr));
    case DType::kBf16:
      return fn(static_cast<Bf16*>(nullptr));
    case DType::kF16:
      return fn(static_cast<F16*>(nullptr));
  }
  RT_CHECK(false, "unknown GPU element type");
}

// A tensor's buffer as its storage type (the Tensor API hands out float*; 16-bit tensors only
// borrow that pointer).
template <typename T>
T* as(float* p) {
  return reinterpret_cast<T*>(p);
}
template <typename T>
const T* as(const float* p) {
  return reinterpret_cast<const T*>(p);
}

// Writes the (N, C, H, W) values of src, laid out as src_spec, into dst laid out as dst_spec
// (element type and format may both differ), on the compute stream.
void convert_layout(const float* src, const TensorSpec& src_spec, float* dst, const TensorSpec& dst_spec);

}  // namespace rt::cuda
