// The elementwise ops as kernels of ours over the flat buffer: ReLU, residual add and gradient
// accumulation, dropout (each a packed map, packed_map.h), the SGD update and the finite check of
// loss scaling, each calling its per-element function from nn/ops/elementwise_math.h. Each runs
// on its input's element type and keeps its layout (Note [Mixed precision]); flatten and reorder
// convert between layouts.
#include "base/check.h"
#include "nn/cuda/device_api.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/element_io.cuh"
#include "nn/ops/cuda/make.h"
#include "nn/ops/cuda/packed_map.h"
#include "nn/ops/elementwise_math.h"

namespace rt::cuda {
namespace {

// The per-element ops of the packed maps (packed_map.h): op(a, i) or op(a, b, i) for element i.
struct ReluForward {
  RT_HD float operator()(float x, int64_t) const { return relu_forward(x); }
};
struct ReluBackward {
  RT_HD float operator()(float y, float dy, int64_t) const { return relu_backward(y, dy); }
};
struct Sum {
  RT_HD float operator()(float a, float b, int64_t) const { return a + b; }
};
// seed_step: (seed, step) in device memory (CudaDropout's), read when the kernel runs.
struct DropoutMask {
  const uint64_t* seed_step;
  float p;
  RT_HD float operator()(float x, int64_t i) const {
    return x * dropout_scale(seed_step[0], seed_step[1], static_cast<uint64_t>(i), p);
  }
};

__global__ void store_seed_step(uint64_t* seed_step, uint64_t seed, uint64_t step) {
  seed_step[0] = seed;
  seed_step[1] = step;
}

template <int P, typename T, typename Op>
__global__ void map_kernel(Op op, const T* a, const T* b, T* y, int64_t n) {
  map_share<P>(op, a, b, y, n, blockIdx.x * int64_t{blockDim.x} + threadIdx.x, int64_t{gridDim.x} * blockDim.x);
}

// y = op(a) or op(a, b) over n elements of the storage type `t`, on the compute stream, 16
// bytes per load and store where the pointers allow. b is null for a unary op.
template <typename Op>
void launch_map(DType t, const Op& op, const float* a, const float* b, float* y, int64_t n) {
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
__global__ void sgd_kernel(SgdStep s, float* w, const float* g, float* v, int64_t n) {
  RT_FOR_EACH_ELEMENT(i, n) sgd_element(s, w[i], g[i], v[i]);
}
__global__ void find_non_finite(const float* x, int64_t n, int* found) {
  RT_FOR_EACH_ELEMENT(i, n) if (!isfinite(x[i]))* found = 1;
}

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

void copy_on_gpu(float* dst, const float* src, size_t bytes) {
  RT_CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, context().stream));
}

void convert(const Tensor& src, float* dst, const TensorSpec& dst_spec) {
  convert_layout(src.data(), src.spec(), dst, dst_spec);
}

class CudaRelu final : public ReluOp {
 public:
  explicit CudaRelu(DType t) : dtype_(t) {}
  void forward(const Tensor& x, Tensor& y) override {
    launch_map(dtype_, ReluForward{}, x.data(), nullptr, y.data(), x.numel());
  }
  void backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
    launch_map(dtype_, ReluBackward{}, y.data(), dy.data(), dx.data(), y.numel());
  }

 private:
  DType dtype_;
};

class CudaAdd final : public AddOp {
 public:
  explicit CudaAdd(DType t) : dtype_(t) {}
  void forward(const Tensor& a, const Tensor& b, Tensor& y) override {
    launch_map(dtype_, Sum{}, a.data(), b.data(), y.data(), a.numel());
  }
  void backward(const Tensor& dy, Tensor* da, Tensor* db) override {
    if (da) copy_on_gpu(da->data(), dy.data(), dy.bytes());
    if (db) copy_on_gpu(db->data(), dy.data(), dy.bytes());
  }

 private:
  DType dtype_;
};

// The mask is recomputed in backward from (seed, step): nothing is stored. The pair lives in the
// op's device memory, written by a kernel set_step enqueues, so the mask kernels' arguments are
// the same every step and a recorded forward and backward replay with the current step (Note
// [Captured steps] in nn/device.h).
class CudaDropout final : public DropoutOp {
 public:
  CudaDropout(double p, DType t)
      : p_(static_cast<float>(p)), dtype_(t), seed_step_(allocate_zeroed(2 * sizeof(uint64_t))) {}
  void set_step(uint64_t seed, uint64_t step) override {
    store_seed_step<<<1, 1, 0, context().stream>>>(seed_step(), seed, step);
    RT_CU_LAUNCHED();
  }
  void forward(const Tensor& x, Tensor& y, bool training) override {
    active_ = training && p_ > 0;
    apply(x, y);
  }
  void backward(const Tensor& dy, Tensor& dx) override { apply(dy, dx); }

 private:
  uint64_t* seed_step() const { return static_cast<uint64_t*>(seed_step_.get()); }
  void apply(const Tensor& in, Tensor& out) {
    if (!active_) return copy_on_gpu(out.data(), in.data(), in.bytes());
    launch_map(dtype_, DropoutMask{seed_step(), p_}, in.data(), nullptr, out.data(), in.numel());
  }

  float p_;
  DType dtype_;
  bool active_ = false;
  std::shared_ptr<void> seed_step_;  // (seed, step) as two uint64 on the GPU
};

// To plain float32 (N, C*H*W) in PyTorch's order, whatever the input's layout (Note [Mixed
// precision]): the fully connected layers after it run in float32.
class CudaFlatten final : public FlattenOp {
 public:
  explicit CudaFlatten(const TensorSpec& x)
      : x_spec_(x),
        y_spec_(plain_spec({x.shape[0], numel(x.shape) / x.shape[0]}, Device::kCuda)),
        x_as_plain_(plain_spec(x.shape, Device::kCuda)) {}
  const TensorSpec& y_spec() const override { return y_spec_; }
  void forward(const Tensor& x, Tensor& y) override { convert(x, y.data(), x_as_plain_); }
  void backward(const Tensor& dy, Tensor& dx) override {
    convert(Tensor(x_as_plain_, const_cast<float*>(dy.data()), nullptr), dx.data(), x_spec_);
  }

 private:
  TensorSpec x_spec_, y_spec_;
  TensorSpec x_as_plain_;  // y seen as (N, C, H, W): same bytes, plain float32
};

}  // namespace

std::unique_ptr<ReluOp> make_relu(const TensorSpec& x) { return std::make_unique<CudaRelu>(dtype_of(x)); }
std::unique_ptr<AddOp> make_add(const TensorSpec& a, const TensorSpec& b) {
  RT_CHECK(a.same_as(b), "add on the GPU needs both inputs in one layout, got ", a.describe(), " and ", b.describe());
  return std::make_unique<CudaAdd>(dtype_of(a));
}
std::unique_ptr<DropoutOp> make_dropout(double p, const TensorSpec& x) {
  return std::make_unique<CudaDropout>(p, dtype_of(x));
}
std::unique_ptr<FlattenOp> make_flatten(const TensorSpec& x) { return std::make_unique<CudaFlatten>(x); }

void accumulate(Tensor& dst, const Tensor& src) {
  RT_CHECK(dst.spec().same_as(src.spec()), "accumulate on the GPU needs one layout, got ", dst.spec().describe(),
           " and ", src.spec().describe());
  launch_map(dtype_of(dst.spec()), Sum{}, dst.data(), src.data(), dst.data(), dst.numel());
}

void reorder(const Tensor& src, Tensor& dst) { convert(src, dst.data(), dst.spec()); }

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

void sgd_update(const SgdStep& step, float* w, const float* g, float* v, int64_t n) {
  if (n == 0) return;
  sgd_kernel<<<blocks_for(n), 256, 0, context().stream>>>(step, w, g, v, n);
  RT_CU_LAUNCHED();
}

bool all_finite(const float* x, int64_t n) {
  if (n == 0) return true;
  int* found = static_cast<int*>(scratch(sizeof(int)));
  const cudaStream_t s = context().stream;
  RT_CU(cudaMemsetAsync(found, 0, sizeof(int), s));
  find_non_finite<<<blocks_for(n), 256, 0, s>>>(x, n, found);
  RT_CU_LAUNCHED();
  int host = 0;
  RT_CU(cudaMemcpyAsync(&host, found, sizeof(int), cudaMemcpyDeviceToHost, s));
  RT_CU(cudaStreamSynchronize(s));
  return host == 0;
}

}  // namespace rt::cuda
