// Max, average and adaptive average pooling as kernels of ours over plain NCHW, on the windows of
// PoolAxis (nn/ops/elementwise_math.h). Max pooling records each output's arg-max (the first
// largest, as the CPU) so backward needs only dy. Backward gathers: each input element sums the
// outputs whose windows hold it, so it is deterministic and needs no atomics.
#include "base/check.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/make.h"
#include "nn/ops/elementwise_math.h"

namespace rt::cuda {
namespace {

struct PoolPlan {
  PoolAxis h, w;
  int64_t planes = 0;  // N x C
  bool max = false;
  bool count_include_pad = true;
};

__global__ void pool_forward(PoolPlan p, const float* x, float* y, int32_t* argmax) {
  const int64_t out_plane = p.h.out * p.w.out, total = p.planes * out_plane;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < total; o += int64_t{gridDim.x} * blockDim.x) {
    const int64_t plane = o / out_plane, i = o % out_plane / p.w.out, j = o % p.w.out;
    const int64_t h0 = p.h.begin(i), h1 = p.h.end(i), w0 = p.w.begin(j), w1 = p.w.end(j);
    const float* in = x + plane * p.h.in * p.w.in;
    float best = -INFINITY, sum = 0;
    int32_t best_at = -1;
    int64_t inside = 0;
    for (int64_t h = h0 > 0 ? h0 : 0; h < (h1 < p.h.in ? h1 : p.h.in); ++h)
      for (int64_t w = w0 > 0 ? w0 : 0; w < (w1 < p.w.in ? w1 : p.w.in); ++w) {
        const float v = in[h * p.w.in + w];
        if (v > best || best_at < 0) best = v, best_at = static_cast<int32_t>(h * p.w.in + w);
        sum += v;
        ++inside;
      }
    if (p.max) {
      y[o] = best;
      argmax[o] = best_at;
    } else {
      const int64_t count = p.count_include_pad ? (h1 - h0) * (w1 - w0) : inside;
      y[o] = sum / static_cast<float>(count);
    }
  }
}

__global__ void pool_backward(PoolPlan p, const float* dy, const int32_t* argmax, float* dx) {
  const int64_t in_plane = p.h.in * p.w.in, total = p.planes * in_plane, out_plane = p.h.out * p.w.out;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t plane = e / in_plane, at = e % in_plane, h = at / p.w.in, w = at % p.w.in;
    float g = 0;
    for (int64_t i = p.h.first_output(h); i <= p.h.last_output(h); ++i) {
      if (!p.h.contains(i, h)) continue;
      for (int64_t j = p.w.first_output(w); j <= p.w.last_output(w); ++j) {
        if (!p.w.contains(j, w)) continue;
        const int64_t o = plane * out_plane + i * p.w.out + j;
        if (p.max) {
          if (argmax[o] == at) g += dy[o];
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
        g += dy[o] / static_cast<float>(count);
      }
    }
    dx[e] = g;
  }
}

class CudaPool2d final : public Pool2dOp {
 public:
  explicit CudaPool2d(const PoolPlan& plan, const Shape& x)
      : plan_(plan), y_spec_(plain_spec({x[0], x[1], plan.h.out, plan.w.out}, Device::kCuda)) {
    if (plan.max) argmax_ = allocate_zeroed(Device::kCuda, numel(y_spec_.shape) * sizeof(int32_t));
  }

  const TensorSpec& y_spec() const override { return y_spec_; }

  void forward(const Tensor& x, Tensor& y, bool) override {
    pool_forward<<<blocks_for(y.numel()), 256, 0, context().stream>>>(plan_, x.data(), y.data(), argmax());
    RT_CU_LAUNCHED();
  }

  void backward(const Tensor& dy, Tensor& dx) override {
    pool_backward<<<blocks_for(dx.numel()), 256, 0, context().stream>>>(plan_, dy.data(), argmax(), dx.data());
    RT_CU_LAUNCHED();
  }

 private:
  int32_t* argmax() { return static_cast<int32_t*>(argmax_.get()); }

  PoolPlan plan_;
  TensorSpec y_spec_;
  std::shared_ptr<void> argmax_;  // max pooling: per output, the arg-max's position in its input plane
};

}  // namespace

std::unique_ptr<Pool2dOp> make_pool2d(const Pool2dGeometry& g, const TensorSpec& x) {
  const Shape y = g.output_shape(x.shape);
  PoolPlan p;
  p.h = {x.shape[2], y[2], g.kernel_h, g.stride_h, g.pad_h};
  p.w = {x.shape[3], y[3], g.kernel_w, g.stride_w, g.pad_w};
  p.planes = x.shape[0] * x.shape[1];
  p.max = g.kind == PoolKind::kMax;
  p.count_include_pad = g.count_include_pad;
  return std::make_unique<CudaPool2d>(p, x.shape);
}

std::unique_ptr<Pool2dOp> make_adaptive_avg_pool2d(int64_t out_h, int64_t out_w, const TensorSpec& x) {
  PoolPlan p;
  p.h = {x.shape[2], out_h, 0, 1, 0};
  p.w = {x.shape[3], out_w, 0, 1, 0};
  p.planes = x.shape[0] * x.shape[1];
  return std::make_unique<CudaPool2d>(p, x.shape);
}

}  // namespace rt::cuda
