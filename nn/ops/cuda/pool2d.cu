// Max, average and adaptive average pooling as kernels of ours, on the windows of PoolAxis
// (nn/ops/elementwise_math.h), in the input's layout (NCHW or NHWC, float32 or 16 bits, summing in
// float32). Max pooling records each output's arg-max (the first largest, as the CPU) so backward
// needs only dy. Backward gathers: each input element sums the outputs whose windows hold it, so
// it is deterministic and needs no atomics. Where max pooling's windows are disjoint (VGG-16's
// 2x2/2) it scatters instead: each output hands its gradient to its arg-max, the one input no
// other window holds, after dx is zeroed; a quarter of the threads and none of the gather's
// window arithmetic per input, and the same values (up to the sign of a zero gradient and NaN
// payloads, which the gather's 0 + dy normalises). Indices are 32-bit wherever the
// tensors allow (see BasicPoolAxis): with 64-bit ones VGG-16's first max pooling's backward took
// 6.8 ms at batch 64 on an H100.
#include <algorithm>

#include "base/check.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/element_io.cuh"
#include "nn/ops/cuda/make.h"
#include "nn/ops/cuda/packed_map.h"
#include "nn/ops/elementwise_math.h"

namespace rt::cuda {
namespace {

struct PoolPlan {
  PoolAxis h, w;
  int64_t planes = 0;  // N x C
  int64_t channels = 0;
  Format format = Format::kNchw;
  DType dtype = DType::kF32;
  bool max = false;
  bool count_include_pad = true;
};

// Every kernel here walks packs of P channels: in NHWC with C a multiple of the 16-byte pack
// (packed_map.h), one thread reads 16 bytes at a time and does one window's index arithmetic for
// P channels; elsewhere P = 1. A pack tensor is walked as the element tensor with C / P channels;
// arg-maxes stay one per element (pack o's lane k is element o * P + k in NHWC).
template <typename T, typename I, int P>
__global__ void pool_forward(PoolPlan p, const T* x, T* y, int32_t* argmax) {
  using V = Pack<T, P>;
  const V* xv = reinterpret_cast<const V*>(x);
  V* yv = reinterpret_cast<V*>(y);
  const BasicPoolAxis<I> ah = p.h.as<I>(), aw = p.w.as<I>();
  const I C = static_cast<I>(p.channels / P), total = static_cast<I>(p.planes / P) * ah.out * aw.out;
  for (I o = blockIdx.x * blockDim.x + threadIdx.x; o < total; o += gridDim.x * blockDim.x) {
    const BasicIndex4<I> at = element_index(p.format, C, ah.out, aw.out, o);
    const I i = at.h, j = at.w;
    const I h0 = ah.begin(i), h1 = ah.end(i), w0 = aw.begin(j), w1 = aw.end(j);
    float best[P], sum[P];
    int32_t best_at[P];
    for (int k = 0; k < P; ++k) best[k] = -INFINITY, sum[k] = 0, best_at[k] = -1;
    I inside = 0;
    for (I h = h0 > 0 ? h0 : 0; h < (h1 < ah.in ? h1 : ah.in); ++h)
      for (I w = w0 > 0 ? w0 : 0; w < (w1 < aw.in ? w1 : aw.in); ++w) {
        const V v = xv[element_offset(p.format, C, ah.in, aw.in, at.n, at.c, h, w)];
        for (int k = 0; k < P; ++k) {
          const float e = load(&v.v[k]);
          if (e > best[k] || best_at[k] < 0) best[k] = e, best_at[k] = static_cast<int32_t>(h * aw.in + w);
          sum[k] += e;
        }
        ++inside;
      }
    V out;
    if (p.max) {
      for (int k = 0; k < P; ++k) store(&out.v[k], best[k]), argmax[o * P + k] = best_at[k];
    } else {
      const I count = p.count_include_pad ? (h1 - h0) * (w1 - w0) : inside;
      for (int k = 0; k < P; ++k) store(&out.v[k], sum[k] / static_cast<float>(count));
    }
    yv[o] = out;
  }
}

template <typename T, typename I, int P>
__global__ void pool_backward(PoolPlan p, const T* dy, const int32_t* argmax, T* dx) {
  using V = Pack<T, P>;
  const V* dyv = reinterpret_cast<const V*>(dy);
  V* dxv = reinterpret_cast<V*>(dx);
  const BasicPoolAxis<I> ah = p.h.as<I>(), aw = p.w.as<I>();
  const I C = static_cast<I>(p.channels / P), total = static_cast<I>(p.planes / P) * ah.in * aw.in;
  for (I e = blockIdx.x * blockDim.x + threadIdx.x; e < total; e += gridDim.x * blockDim.x) {
    const BasicIndex4<I> in = element_index(p.format, C, ah.in, aw.in, e);
    const I h = in.h, w = in.w, at = h * aw.in + w;
    float g[P];
    for (int k = 0; k < P; ++k) g[k] = 0;
    for (I i = ah.first_output(h); i <= ah.last_output(h); ++i) {
      if (!ah.contains(i, h)) continue;
      for (I j = aw.first_output(w); j <= aw.last_output(w); ++j) {
        if (!aw.contains(j, w)) continue;
        const I o = element_offset(p.format, C, ah.out, aw.out, in.n, in.c, i, j);
        if (p.max) {  // dy is read only where some lane's arg-max is this input
          bool hit[P], any = false;
          for (int k = 0; k < P; ++k) hit[k] = argmax[o * P + k] == at, any = any || hit[k];
          if (!any) continue;
          const V d = dyv[o];
          for (int k = 0; k < P; ++k)
            if (hit[k]) g[k] += load(&d.v[k]);
          continue;
        }
        const V d = dyv[o];
        I count;
        if (p.count_include_pad) {
          count = (ah.end(i) - ah.begin(i)) * (aw.end(j) - aw.begin(j));
        } else {
          const I hh = min(ah.end(i), ah.in) - max(ah.begin(i), I{0});
          const I ww = min(aw.end(j), aw.in) - max(aw.begin(j), I{0});
          count = hh * ww;
        }
        for (int k = 0; k < P; ++k) g[k] += load(&d.v[k]) / static_cast<float>(count);
      }
    }
    V out;
    for (int k = 0; k < P; ++k) store(&out.v[k], g[k]);
    dxv[e] = out;
  }
}

// Max pooling's backward over disjoint windows: dx (zeroed first) takes each output's gradient at
// its arg-max, which no other window holds.
template <typename T, typename I, int P>
__global__ void max_pool_backward_scatter(PoolPlan p, const T* dy, const int32_t* argmax, T* dx) {
  using V = Pack<T, P>;
  const V* dyv = reinterpret_cast<const V*>(dy);
  const BasicPoolAxis<I> ah = p.h.as<I>(), aw = p.w.as<I>();
  const I C = static_cast<I>(p.channels), total = static_cast<I>(p.planes / P) * ah.out * aw.out;
  for (I o = blockIdx.x * blockDim.x + threadIdx.x; o < total; o += gridDim.x * blockDim.x) {
    const BasicIndex4<I> at = element_index(p.format, C / P, ah.out, aw.out, o);
    const V d = dyv[o];
    for (int k = 0; k < P; ++k) {
      const int32_t a = argmax[o * P + k];
      if (a < 0) continue;  // no arg-max: validate() rules it out (pad < kernel); never write outside
      const I h = static_cast<I>(a) / aw.in, w = static_cast<I>(a) % aw.in;
      store(&dx[element_offset(p.format, C, ah.in, aw.in, at.n, at.c * P + k, h, w)], load(&d.v[k]));
    }
  }
}

class CudaPool2d final : public Pool2dOp {
 public:
  explicit CudaPool2d(const PoolPlan& plan, const Shape& x)
      : plan_(plan), y_spec_(gpu_spec({x[0], x[1], plan.h.out, plan.w.out}, plan.dtype, plan.format)) {
    if (plan.max) argmax_ = allocate_zeroed(Device::kCuda, numel(y_spec_.shape) * sizeof(int32_t));
  }

  const TensorSpec& y_spec() const override { return y_spec_; }

  void forward(const Tensor& x, Tensor& y, bool) override {
    with_kernel_types(std::max(x.numel(), y.numel()), {x.data(), y.data()},
                      [&](auto* tag, auto* index_tag, auto width) {
                        using T = std::remove_pointer_t<decltype(tag)>;
                        using I = std::remove_pointer_t<decltype(index_tag)>;
                        constexpr int P = decltype(width)::value;
                        pool_forward<T, I, P><<<blocks_for(y.numel() / P), 256, 0, context().stream>>>(
                            plan_, as<T>(x.data()), as<T>(y.data()), argmax());
                      });
    RT_CU_LAUNCHED();
  }

  void backward(const Tensor& dy, Tensor& dx) override {
    const bool scatter = plan_.max && plan_.h.disjoint() && plan_.w.disjoint();
    if (scatter) RT_CU(cudaMemsetAsync(dx.data(), 0, dx.bytes(), context().stream));
    with_kernel_types(
        std::max(dx.numel(), dy.numel()), {dy.data(), dx.data()}, [&](auto* tag, auto* index_tag, auto width) {
          using T = std::remove_pointer_t<decltype(tag)>;
          using I = std::remove_pointer_t<decltype(index_tag)>;
          constexpr int P = decltype(width)::value;
          const cudaStream_t s = context().stream;
          if (scatter) {
            max_pool_backward_scatter<T, I, P>
                <<<blocks_for(dy.numel() / P), 256, 0, s>>>(plan_, as<T>(dy.data()), argmax(), as<T>(dx.data()));
          } else {
            pool_backward<T, I, P>
                <<<blocks_for(dx.numel() / P), 256, 0, s>>>(plan_, as<T>(dy.data()), argmax(), as<T>(dx.data()));
          }
        });
    RT_CU_LAUNCHED();
  }

 private:
  int32_t* argmax() { return static_cast<int32_t*>(argmax_.get()); }

  // Calls f(T tag, I tag, width) with the storage type, the index type for tensors of up to
  // `largest` elements, and the channel pack: 16 bytes in NHWC where C allows and `pointers` are
  // aligned, else 1.
  template <typename F>
  void with_kernel_types(int64_t largest, std::initializer_list<const void*> pointers, F&& f) {
    with_storage(plan_.dtype, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      with_index_type(largest, [&](auto* index_tag) {
        if (plan_.format == Format::kNhwc && plan_.channels % kWidePack<T> == 0) {
          with_pack_width<T>(pointers, [&](auto width) { f(tag, index_tag, width); });
        } else {
          f(tag, index_tag, std::integral_constant<int, 1>{});
        }
      });
    });
  }

  PoolPlan plan_;
  TensorSpec y_spec_;
  std::shared_ptr<void> argmax_;  // max pooling: per output, the arg-max's position in its input plane
};

// A plan with x's planes, element type and format (the output keeps them).
PoolPlan layout_of(const TensorSpec& x) {
  PoolPlan p;
  p.planes = x.shape[0] * x.shape[1];
  p.channels = x.shape[1];
  p.format = format_of(x);
  p.dtype = dtype_of(x);
  return p;
}

}  // namespace

std::unique_ptr<Pool2dOp> make_pool2d(const Pool2dGeometry& g, const TensorSpec& x) {
  const Shape y = g.output_shape(x.shape);
  PoolPlan p = layout_of(x);
  p.h = {x.shape[2], y[2], g.kernel_h, g.stride_h, g.pad_h};
  p.w = {x.shape[3], y[3], g.kernel_w, g.stride_w, g.pad_w};
  p.max = g.kind == PoolKind::kMax;
  p.count_include_pad = g.count_include_pad;
  return std::make_unique<CudaPool2d>(p, x.shape);
}

std::unique_ptr<Pool2dOp> make_adaptive_avg_pool2d(int64_t out_h, int64_t out_w, const TensorSpec& x) {
  PoolPlan p = layout_of(x);
  p.h = {x.shape[2], out_h, 0, 1, 0};
  p.w = {x.shape[3], out_w, 0, 1, 0};
  return std::make_unique<CudaPool2d>(p, x.shape);
}

}  // namespace rt::cuda
