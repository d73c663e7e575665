// The packed elementwise map every simple op of ours runs on: y = op(a) or op(a, b) over a flat
// buffer of one storage type, 16 bytes per load and store where the pointers allow (packed_map.h).
// Included by the .cu files of ReLU, add and dropout.
#pragma once

#include <type_traits>

#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/element_io.cuh"
#include "nn/ops/cuda/packed_map.h"

namespace rt::cuda {

template <int P, typename T, typename Op>
__global__ void map_kernel(Op op, const T* a, const T* b, T* y, int64_t n) {
  map_share<P>(op, a, b, y, n, blockIdx.x * int64_t{blockDim.x} + threadIdx.x, int64_t{gridDim.x} * blockDim.x);
}

// y = op(a) or op(a, b) over n elements of the storage type `t`, on the compute stream, 16
// bytes per load and store where the pointers allow. b is null for a unary op.
template <typename Op>
inline void launch_map(DType t, const Op& op, const float* a, const float* b, float* y, int64_t n) {
  if (n == 0) return;
  with_storage(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    with_pack_width<T>({a, b, y}, [&](auto width) {
      constexpr int P = decltype(width)::value;
      map_kernel<P>
          <<<blocks_for(n / P > 0 ? n / P : 1), 256, 0, context().stream>>>(op, as<T>(a), as<T>(b), as<T>(y), n);
    });
  });
  RT_CU_LAUNCHED();
}

// On the compute stream, without a kernel: a gradient passed through, an inactive dropout.
inline void copy_on_gpu(float* dst, const float* src, size_t bytes) {
  RT_CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, context().stream));
}

}  // namespace rt::cuda
