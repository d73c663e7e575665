// The elementwise ops as kernels of ours over the flat buffer: ReLU, residual add and gradient
// accumulation, dropout and the SGD update, each calling its per-element function from
// nn/ops/elementwise_math.h. Flatten and reorder are copies on the GPU, where every tensor is plain.
#include "base/check.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/make.h"
#include "nn/ops/elementwise_math.h"

namespace rt::cuda {
namespace {

__global__ void relu_forward_kernel(const float* x, float* y, int64_t n) {
  RT_FOR_EACH_ELEMENT(i, n) y[i] = relu_forward(x[i]);
}
__global__ void relu_backward_kernel(const float* y, const float* dy, float* dx, int64_t n) {
  RT_FOR_EACH_ELEMENT(i, n) dx[i] = relu_backward(y[i], dy[i]);
}
__global__ void add_kernel(const float* a, const float* b, float* y, int64_t n) {
  RT_FOR_EACH_ELEMENT(i, n) y[i] = a[i] + b[i];
}
__global__ void accumulate_kernel(float* dst, const float* src, int64_t n) {
  RT_FOR_EACH_ELEMENT(i, n) dst[i] += src[i];
}
__global__ void dropout_kernel(const float* x, float* y, int64_t n, uint64_t seed, uint64_t step, float p) {
  RT_FOR_EACH_ELEMENT(i, n) y[i] = x[i] * dropout_scale(seed, step, static_cast<uint64_t>(i), p);
}
__global__ void sgd_kernel(SgdStep s, float* w, const float* g, float* v, int64_t n) {
  RT_FOR_EACH_ELEMENT(i, n) sgd_element(s, w[i], g[i], v[i]);
}

void copy_on_gpu(float* dst, const float* src, size_t bytes) {
  RT_CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, context().stream));
}

class CudaRelu final : public ReluOp {
 public:
  void forward(const Tensor& x, Tensor& y) override {
    relu_forward_kernel<<<blocks_for(x.numel()), 256, 0, context().stream>>>(x.data(), y.data(), x.numel());
    RT_CU_LAUNCHED();
  }
  void backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
    relu_backward_kernel<<<blocks_for(y.numel()), 256, 0, context().stream>>>(y.data(), dy.data(), dx.data(),
                                                                               y.numel());
    RT_CU_LAUNCHED();
  }
};

class CudaAdd final : public AddOp {
 public:
  void forward(const Tensor& a, const Tensor& b, Tensor& y) override {
    add_kernel<<<blocks_for(a.numel()), 256, 0, context().stream>>>(a.data(), b.data(), y.data(), a.numel());
    RT_CU_LAUNCHED();
  }
  void backward(const Tensor& dy, Tensor* da, Tensor* db) override {
    if (da) copy_on_gpu(da->data(), dy.data(), dy.bytes());
    if (db) copy_on_gpu(db->data(), dy.data(), dy.bytes());
  }
};

// The mask is recomputed in backward from (seed, step): nothing is stored.
class CudaDropout final : public DropoutOp {
 public:
  explicit CudaDropout(double p) : p_(static_cast<float>(p)) {}
  void forward(const Tensor& x, Tensor& y, bool training, uint64_t seed, uint64_t step) override {
    active_ = training && p_ > 0;
    seed_ = seed, step_ = step;
    apply(x, y);
  }
  void backward(const Tensor& dy, Tensor& dx) override { apply(dy, dx); }

 private:
  void apply(const Tensor& in, Tensor& out) {
    if (!active_) return copy_on_gpu(out.data(), in.data(), in.bytes());
    dropout_kernel<<<blocks_for(in.numel()), 256, 0, context().stream>>>(in.data(), out.data(), in.numel(), seed_,
                                                                         step_, p_);
    RT_CU_LAUNCHED();
  }

  float p_;
  bool active_ = false;
  uint64_t seed_ = 0, step_ = 0;
};

class CudaFlatten final : public FlattenOp {
 public:
  explicit CudaFlatten(const TensorSpec& x) : y_spec_(plain_spec({x.shape[0], numel(x.shape) / x.shape[0]}, Device::kCuda)) {}
  const TensorSpec& y_spec() const override { return y_spec_; }
  void forward(const Tensor& x, Tensor& y) override { copy_on_gpu(y.data(), x.data(), x.bytes()); }
  void backward(const Tensor& dy, Tensor& dx) override { copy_on_gpu(dx.data(), dy.data(), dy.bytes()); }

 private:
  TensorSpec y_spec_;
};

}  // namespace

std::unique_ptr<ReluOp> make_relu(const TensorSpec&) { return std::make_unique<CudaRelu>(); }
std::unique_ptr<AddOp> make_add(const TensorSpec&, const TensorSpec&) { return std::make_unique<CudaAdd>(); }
std::unique_ptr<DropoutOp> make_dropout(double p, const TensorSpec&) { return std::make_unique<CudaDropout>(p); }
std::unique_ptr<FlattenOp> make_flatten(const TensorSpec& x) { return std::make_unique<CudaFlatten>(x); }

void accumulate(Tensor& dst, const Tensor& src) {
  accumulate_kernel<<<blocks_for(dst.numel()), 256, 0, context().stream>>>(dst.data(), src.data(), dst.numel());
  RT_CU_LAUNCHED();
}

void reorder(const Tensor& src, Tensor& dst) { copy_on_gpu(dst.data(), src.data(), src.bytes()); }

void sgd_update(const SgdStep& step, float* w, const float* g, float* v, int64_t n) {
  if (n == 0) return;
  sgd_kernel<<<blocks_for(n), 256, 0, context().stream>>>(step, w, g, v, n);
  RT_CU_LAUNCHED();
}

}  // namespace rt::cuda
