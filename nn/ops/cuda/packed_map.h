// The walk of an elementwise kernel over a flat buffer, P elements at a time. With P = 16 /
// sizeof(T) every load and store moves 16 bytes (8 bf16 or fp16 values, 4 floats): one 2-byte
// element per thread leaves 16-bit tensors well short of the memory's bandwidth. Where a pointer
// is not 16-byte aligned, P = 1. Plain C++ with RT_HD, so the walk is tested on the host by
// playing every thread of a grid (tests/nn/cuda_math_test.cpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "base/host_device.h"
#include "nn/ops/cuda/element_io.cuh"

namespace rt::cuda {

template <typename T, int P>
struct alignas(sizeof(T) * P) Pack {
  T v[P];
};

template <typename T>
constexpr int kWidePack = static_cast<int>(16 / sizeof(T));

// Calls f(std::integral_constant<int, P>{}) with the widest P every pointer's alignment allows.
template <typename T, typename F>
void with_pack_width(std::initializer_list<const void*> pointers, F&& f) {
  for (const void* p : pointers)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return f(std::integral_constant<int, 1>{});
  f(std::integral_constant<int, kWidePack<T>>{});
}

// One thread's share of y[i] = op(a[i], i), or op(a[i], b[i], i) for a binary op, over i < n:
// packs first, first + stride, ..., then the same walk over the n % P elements of the tail. y may
// be a: each element is read before its own write, by the same thread.
template <int P, typename T, typename Op>
RT_HD void map_share(const Op& op, const T* a, const T* b, T* y, int64_t n, int64_t first, int64_t stride) {
  constexpr bool kBinary = std::is_invocable_v<Op, float, float, int64_t>;
  const int64_t packs = n / P;
  for (int64_t i = first; i < packs; i += stride) {
    const Pack<T, P> pa = reinterpret_cast<const Pack<T, P>*>(a)[i];
    Pack<T, P> out;
    if constexpr (kBinary) {
      const Pack<T, P> pb = reinterpret_cast<const Pack<T, P>*>(b)[i];
      for (int k = 0; k < P; ++k) store(&out.v[k], op(load(&pa.v[k]), load(&pb.v[k]), i * P + k));
    } else {
      for (int k = 0; k < P; ++k) store(&out.v[k], op(load(&pa.v[k]), i * P + k));
    }
    reinterpret_cast<Pack<T, P>*>(y)[i] = out;
  }
  for (int64_t at = packs * P + first; at < n; at += stride) {
    if constexpr (kBinary) {
      store(&y[at], op(load(&a[at]), load(&b[at]), at));
    } else {
      store(&y[at], op(load(&a[at]), at));
    }
  }
}

}  // namespace rt::cuda
