// Max, average and adaptive average pooling as kernels of ours, on the windows of PoolAxis
// (nn/ops/elementwise_math.h), in the input's layout (NCHW or NHWC, float32 or 16 bits, summing in
// float32). Max pooling records each output's arg-max (the first
// largest, as the CPU) so backward needs only dy. Backward gathers: each input element sums the
// outputs whose windows hold it, so it is deterministic and needs no atomics.
#include "base/check.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/element_io.cuh"
#include "nn/ops/cuda/make.h"
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

template <typename T>
__global__ void pool_forward(PoolPlan p, const T* x, T* y, int32_t* argmax) {
  const int64_t out_plane = p.h.out * p.w.out, total = p.planes * out_plane, C = p.channels;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < total; o += int64_t{gridDim.x} * blockDim.x) {
    const Index4 at = element_index(p.format, C, p.h.out, p.w.out, o);
    const int64_t i = at.h, j = at.w;
    const int64_t h0 = p.h.begin(i), h1 = p.h.end(i), w0 = p.w.begin(j), w1 = p.w.end(j);
    float best = -INFINITY, sum = 0;
    int32_t best_at = -1;
    int64_t inside = 0;
    for (int64_t h = h0 > 0 ? h0 : 0; h < (h1 < p.h.in ? h1 : p.h.in); ++h)
      for (int64_t w = w0 > 0 ? w0 : 0; w < (w1 < p.w.in ? w1 : p.w.in); ++w) {
        const float v = load(&x[element_offset(p.format, C, p.h.in, p.w.in, at.n, at.c, h, w)]);
        if (v > best || best_at < 0) best = v, best_at = static_cast<int32_t>(h * p.w.in + w);
        sum += v;
        ++inside;
      }
    if (p.max) {
      store(&y[o], best);
      argmax[o] = best_at;
    } else {
      const int64_t count = p.count_include_pad ? (h1 - h0) * (w1 - w0) : inside;
      store(&y[o], sum / static_cast<float>(count));
    }
  }
}

template <typename T>
__global__ void pool_backward(PoolPlan p, const T* dy, const int32_t* argmax, T* dx) {
  const int64_t in_plane = p.h.in * p.w.in, total = p.planes * in_plane, C = p.channels;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    const Index4 in = element_index(p.format, C, p.h.in, p.w.in, e);
    const int64_t h = in.h, w = in.w, at = h * p.w.in + w;
    float g = 0;
    for (int64_t i = p.h.first_output(h); i <= p.h.last_output(h); ++i) {
      if (!p.h.contains(i, h)) continue;
      for (int64_t j = p.w.first_output(w); j <= p.w.last_output(w); ++j) {
        if (!p.w.contains(j, w)) continue;
        const int64_t o = element_offset(p.format, C, p.h.out, p.w.out, in.n, in.c, i, j);
        if (p.max) {
          if (argmax[o] == at) g += load(&dy[o]);
          continue;
        }
        int64_t count;
        if (p.count_include_pad) {
          count = (p.h.end(i) - p.h.begin(i)) * (p.w.end(j) - p.w.begin(j));
        } else {
          const int64_t hh = min(p.h.end(i), p.h.in) - max(p.h.begin(i), int64_t{0});
          const int64_t ww = min(p.w.end(j), p.w.in) - max(p.w.begin(j), int64_t{0});
          count = hh * ww;
        }
        g += load(&dy[o]) / static_cast<float>(count);
      }
    }
    store(&dx[e], g);
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
    with_storage(plan_.dtype, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      pool_forward<<<blocks_for(y.numel()), 256, 0, context().stream>>>(plan_, as<T>(x.data()), as<T>(y.data()),
                                                                        argmax());
    });
    RT_CU_LAUNCHED();
  }

  void backward(const Tensor& dy, Tensor& dx) override {
    with_storage(plan_.dtype, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      pool_backward<<<blocks_for(dx.numel()), 256, 0, context().stream>>>(plan_, as<T>(dy.data()), argmax(),
                                                                          as<T>(dx.data()));
    });
    RT_CU_LAUNCHED();
  }

 private:
  int32_t* argmax() { return static_cast<int32_t*>(argmax_.get()); }

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
