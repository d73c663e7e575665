// Layout and type conversions on the GPU between two layouts of one (N, C, H, W) shape (NCHW and
// NHWC, float32 and 16 bits; Note [Mixed precision]), and reorder, their op.
#include "base/check.h"
#include "nn/cuda/device_api.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/element_io.cuh"
#include "nn/ops/cuda/make.h"
#include "nn/ops/cuda/map_launch.cuh"

namespace rt::cuda {
namespace {

// Between two layouts of one (N, C, H, W) shape: element i of dst's storage order takes the
// same (n, c, h, w) of src. Flatten's plain (N, C*H*W) output is the NCHW order of its input's shape.
// I: the index type (with_index_type); 64-bit division is many times slower on the GPU.
template <typename S, typename D, typename I>
__global__ void convert_kernel(const S* src, Format sf, D* dst, Format df, I C, I H, I W, I n) {
  for (I i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const BasicIndex4<I> at = element_index(df, C, H, W, i);
    store(&dst[i], load(&src[element_offset(sf, C, H, W, at.n, at.c, at.h, at.w)]));
  }
}

}  // namespace

void reorder(const Tensor& src, Tensor& dst) { convert_layout(src.data(), src.spec(), dst.data(), dst.spec()); }

void convert_layout(const float* src, const TensorSpec& src_spec, float* dst, const TensorSpec& dst_spec) {
  const TensorSpec& ss = src_spec;
  if (ss.same_as(dst_spec) || (ss.is_plain() && dst_spec.is_plain())) return copy_on_gpu(dst, src, ss.bytes());
  RT_CHECK(ss.shape.size() == 4 && ss.shape == dst_spec.shape,
           "a GPU layout conversion takes one (N, C, H, W) shape, "
           "got ",
           ss.describe(), " to ", dst_spec.describe());
  const int64_t C = ss.shape[1], H = ss.shape[2], W = ss.shape[3], n = numel(ss.shape);
  const Format sf = format_of(ss), df = format_of(dst_spec);
  with_storage(dtype_of(ss), [&](auto* s_tag) {
    using S = std::remove_pointer_t<decltype(s_tag)>;
    with_storage(dtype_of(dst_spec), [&](auto* d_tag) {
      using D = std::remove_pointer_t<decltype(d_tag)>;
      with_index_type(n, [&](auto* i_tag) {
        using I = std::remove_pointer_t<decltype(i_tag)>;
        convert_kernel<<<blocks_for(n), 256, 0, context().stream>>>(as<S>(src), sf, as<D>(dst), df, I(C), I(H), I(W),
                                                                    I(n));
      });
      RT_CU_LAUNCHED();
    });
  });
}

}  // namespace rt::cuda
