// Note [PowerSGD on the GPU] in dist/powersgd_buckets.h: the phases of Note [PowerSGD] as kernels
// on the collective's communication stream. The local products P = M Q and Q = M^T P are cuBLAS's
// (only their averages are applied, so their summation order may be the library's); what every
// rank applies is computed as the host computes it, operation for operation (Note [PowerSGD
// loops] in dist/powersgd.cpp), with rounding intrinsics so that the compiler can neither fuse a
// multiply-add nor reorder a sum: the orthonormalization's sums are agreed_sum's chunks and lanes
// in double, P Q^T adds its k terms in order. Those two give the host's bits on the same inputs.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "base/check.h"
#include "dist/cuda/device_collective.h"
#include "dist/cuda/device_powersgd.h"
#include "nn/cuda/cublas_library.h"
#include "nn/cuda/device_api.h"
#include "nn/cuda/runtime.h"

namespace rt {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = int64_t{1} << 16;  // agreed_sum's, in dist/powersgd.cpp
constexpr int kLanes = 8;
constexpr int64_t kTile = 2048;  // terms staged in shared memory at a time; divides kChunk

// agreed_sum of x[i] y[i] over i < rows, in one block, as the host makes it: in each chunk, lane l
// is the sum, in order, of the terms of the elements i with (i - chunk's begin) % 8 == l; then
// the lanes in order, then the chunks in order. The block computes each tile's terms together
// and eight threads add them up, each its lane's in order. Every thread gets the total.
__device__ double agreed_dot(const float* x, const float* y, int64_t rows) {
  __shared__ double terms[kTile];
  __shared__ double lane_sums[kLanes];
  __shared__ double total;
  if (threadIdx.x == 0) total = 0;
  for (int64_t begin = 0; begin < rows; begin += kChunk) {
    const int64_t end = min(rows, begin + kChunk);
    if (threadIdx.x < kLanes) lane_sums[threadIdx.x] = 0;
    for (int64_t tile = begin; tile < end; tile += kTile) {
      const int64_t count = min(kTile, end - tile);
      __syncthreads();  // the last tile's terms are added
      for (int64_t j = threadIdx.x; j < count; j += blockDim.x)
        terms[j] = __dmul_rn(static_cast<double>(x[tile + j]), static_cast<double>(y[tile + j]));
      __syncthreads();
      if (threadIdx.x < kLanes) {  // a tile starts at a multiple of 8 from the chunk's begin
        double sum = lane_sums[threadIdx.x];
        for (int64_t j = threadIdx.x; j < count; j += kLanes) sum = __dadd_rn(sum, terms[j]);
        lane_sums[threadIdx.x] = sum;
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      double chunk = 0;
      for (int l = 0; l < kLanes; ++l) chunk = __dadd_rn(chunk, lane_sums[l]);
      total = __dadd_rn(total, chunk);
    }
    __syncthreads();  // lane_sums read before the next chunk clears them
  }
  __syncthreads();
  const double result = total;
  __syncthreads();  // total is cleared by the next call
  return result;
}

// orthonormalize_columns of dist/powersgd.cpp: modified Gram-Schmidt over the k columns of a
// (stored column after column), one block.
__global__ void orthonormalize_kernel(float* a, int64_t rows, int64_t k) {
  for (int64_t c = 0; c < k; ++c) {
    float* column = a + c * rows;
    const auto norm = __double2float_rn(sqrt(agreed_dot(column, column, rows)));
    if (norm == 0) continue;
    for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) column[i] = __fdiv_rn(column[i], norm);
    __syncthreads();
    for (int64_t d = c + 1; d < k; ++d) {
      float* other = a + d * rows;
      const auto dot = __double2float_rn(agreed_dot(column, other, rows));
      for (int64_t i = threadIdx.x; i < rows; i += blockDim.x)
        other[i] = __fsub_rn(other[i], __fmul_rn(dot, column[i]));
      __syncthreads();
    }
  }
}

__global__ void add_into_kernel(float* error, const float* grad, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x)
    error[i] = __fadd_rn(error[i], grad[i]);
}

// grad = P Q^T, each element's k terms added in order as the host adds them; error -= grad.
// squares[0] and [1] gather the error's and M's squares (a metric: in any order). A block takes
// whole rows (no division per element) and sums many before its two atomics: launched with
// decompress_blocks(n) blocks of kThreads.
__global__ void decompress_kernel(const float* p, const float* q, float* grad, float* error, int64_t n, int64_t m,
                                  int64_t k, double* squares) {
  double error_squares = 0, m_squares = 0;
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
      const int64_t at = i * m + j;
      float sum = __fmul_rn(p[i], q[j]);
      for (int64_t c = 1; c < k; ++c) sum = __fadd_rn(sum, __fmul_rn(p[c * n + i], q[c * m + j]));
      grad[at] = sum;
      const float whole = error[at];
      const float left = __fsub_rn(whole, sum);
      error[at] = left;
      m_squares += static_cast<double>(whole) * whole;
      error_squares += static_cast<double>(left) * left;
    }
  }
  __shared__ double block[2][kThreads];
  block[0][threadIdx.x] = error_squares;
  block[1][threadIdx.x] = m_squares;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      block[0][threadIdx.x] += block[0][threadIdx.x + half];
      block[1][threadIdx.x] += block[1][threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(&squares[0], block[0][0]);
    atomicAdd(&squares[1], block[1][0]);
  }
}

// decompress_kernel's grid: a row per block, up to a few blocks per multiprocessor of any GPU.
unsigned decompress_blocks(int64_t n) { return static_cast<unsigned>(std::min<int64_t>(n, 1024)); }

// Device memory of `floats` floats, zeroed.
std::shared_ptr<float> device_floats(int64_t floats) {
  return std::static_pointer_cast<float>(cuda::allocate_zeroed(static_cast<size_t>(std::max<int64_t>(floats, 1)) * 4));
}

// The phases of one tensor on `stream`, cuBLAS's `handle` bound to it. Row-major M (n x m) is
// column-major M^T (m x n); P and Q by columns are column-major n x k and m x k.
// error += grad, q orthonormalized, p = (M^T)^T q.
void enqueue_compress(cublasHandle_t handle, cudaStream_t stream, const PowerSgdMatrix& x, const float* grad,
                      float* error, float* q, float* p) {
  add_into_kernel<<<cuda::blocks_for(x.n * x.m), kThreads, 0, stream>>>(error, grad, x.n * x.m);
  RT_CU_LAUNCHED();
  orthonormalize_kernel<<<1, kThreads, 0, stream>>>(q, x.m, x.k);
  RT_CU_LAUNCHED();
  const float one = 1, zero = 0;
  RT_CU(cuda::cublas().sgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(x.n), static_cast<int>(x.k),
                             static_cast<int>(x.m), &one, error, static_cast<int>(x.m), q, static_cast<int>(x.m), &zero,
                             p, static_cast<int>(x.n)));
}
// p orthonormalized, q_local = M^T p.
void enqueue_project(cublasHandle_t handle, cudaStream_t stream, const PowerSgdMatrix& x, const float* error, float* p,
                     float* q_local) {
  orthonormalize_kernel<<<1, kThreads, 0, stream>>>(p, x.n, x.k);
  RT_CU_LAUNCHED();
  const float one = 1, zero = 0;
  RT_CU(cuda::cublas().sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(x.m), static_cast<int>(x.k),
                             static_cast<int>(x.n), &one, error, static_cast<int>(x.m), p, static_cast<int>(x.n), &zero,
                             q_local, static_cast<int>(x.m)));
}
// grad = p q^T, error -= grad, their squares added into squares[0] and [1].
void enqueue_decompress(cudaStream_t stream, const PowerSgdMatrix& x, const float* p, const float* q, float* grad,
                        float* error, double* squares) {
  decompress_kernel<<<decompress_blocks(x.n), kThreads, 0, stream>>>(p, q, grad, error, x.n, x.m, x.k, squares);
  RT_CU_LAUNCHED();
}

struct DestroyHandle {
  void operator()(cublasHandle_t handle) const { cuda::cublas().destroy(handle); }
};
using CublasHandle = std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, DestroyHandle>;

CublasHandle make_cublas_handle() {
  cublasHandle_t handle = nullptr;
  RT_CU(cuda::cublas().create(&handle));
  return CublasHandle(handle);
}

// PowerSgdBuckets::average() as it is, its phases enqueued on the collective's communication stream.
class DevicePowerSgdBuckets final : public PowerSgdBuckets {
 public:
  DevicePowerSgdBuckets(const std::vector<ParamExtent>& params, const std::vector<std::vector<int64_t>>& shapes,
                        const std::vector<Bucket>& buckets, const PowerSgdOptions& options)
      : PowerSgdBuckets(params, shapes, buckets, options),
        cublas_(make_cublas_handle()),
        first_round_(device_floats(first_round_floats())),
        second_round_(device_floats(second_round_floats())),
        squares_(std::static_pointer_cast<double>(cuda::allocate_zeroed(2 * sizeof(double) * plans().size() + 16))),
        measured_(plans().size()) {
    for (const Tensor& t : tensors())
      live_.push_back({device_floats(t.matrix.n * t.matrix.m), device_floats(t.matrix.k * t.matrix.m)});
    state_from_host();
  }
  ~DevicePowerSgdBuckets() override {
    if (stream_) cudaStreamSynchronize(stream_);
  }

  void average(float* arena, size_t bucket, Collective& collective, const WaitContext& context,
               Timeline* /*timeline: the host only enqueues, its times would say nothing*/) override {
    StreamOrder* order = collective.stream_order();
    RT_CHECK(order != nullptr, "PowerSGD on the GPU needs a collective on GPU memory, not ", collective.describe());
    stream_ = static_cast<cudaStream_t>(order->communication_stream(context));
    RT_CU(cuda::cublas().set_stream(cublas_.get(), stream_));
    RT_CU(cudaMemsetAsync(squares_.get() + 2 * bucket, 0, 2 * sizeof(double), stream_));
    PowerSgdBuckets::average(arena, bucket, collective, context, nullptr);
    measured_[bucket] = true;
  }

  void state_to_host() override {
    synchronize();
    for (size_t i = 0; i < tensors().size(); ++i) {
      Tensor& t = tensors()[i];
      t.error.resize(static_cast<size_t>(t.matrix.n * t.matrix.m));
      t.q.resize(static_cast<size_t>(t.matrix.k * t.matrix.m));
      cuda::copy(t.error.data(), false, live_[i].error.get(), true, t.error.size() * 4);
      cuda::copy(t.q.data(), false, live_[i].q.get(), true, t.q.size() * 4);
    }
  }
  // The host's copies go to the GPU; the errors' copies are then released (they are as large as
  // the compressed gradients): state_to_host() makes them again for a save, and
  // release_host_state() drops them after it.
  void state_from_host() override {
    synchronize();
    for (size_t i = 0; i < tensors().size(); ++i) {
      Tensor& t = tensors()[i];
      const PowerSgdMatrix& x = t.matrix;
      RT_CHECK(static_cast<int64_t>(t.q.size()) == x.k * x.m, "PowerSGD: parameter ", t.param, "'s Q holds ",
               t.q.size(), " floats, not k x m = ", x.k * x.m);
      cuda::copy(live_[i].q.get(), true, t.q.data(), false, t.q.size() * 4);
      if (t.error.empty()) {
        cuda::zero(live_[i].error.get(), static_cast<size_t>(x.n * x.m) * 4);
      } else {
        RT_CHECK(static_cast<int64_t>(t.error.size()) == x.n * x.m, "PowerSGD: parameter ", t.param, "'s error holds ",
                 t.error.size(), " floats, not n x m = ", x.n * x.m);
        cuda::copy(live_[i].error.get(), true, t.error.data(), false, t.error.size() * 4);
      }
      t.error = std::vector<float>();
    }
  }
  void release_host_state() override {
    for (Tensor& t : tensors()) t.error = std::vector<float>();
  }
  double error_relative_norm() const override {
    synchronize();
    std::vector<double> squares(2 * plans().size());
    cuda::copy(squares.data(), false, squares_.get(), true, squares.size() * sizeof(double));
    double error_squares = 0, m_squares = 0;
    for (size_t b = 0; b < measured_.size(); ++b)
      if (measured_[b]) error_squares += squares[2 * b], m_squares += squares[2 * b + 1];
    return m_squares > 0 ? std::sqrt(error_squares / m_squares) : 0;
  }

 private:
  struct Live {
    std::shared_ptr<float> error, q;
  };
  void synchronize() const {
    if (stream_) RT_CU(cudaStreamSynchronize(stream_));
  }

  float* first_round() override { return first_round_.get(); }
  float* second_round() override { return second_round_.get(); }
  void copy(float* to, const float* from, int64_t floats) override {
    if (floats > 0)
      RT_CU(cudaMemcpyAsync(to, from, static_cast<size_t>(floats) * 4, cudaMemcpyDeviceToDevice, stream_));
  }
  void compress(size_t tensor, const float* grad, float* p) override {
    enqueue_compress(cublas_.get(), stream_, tensors()[tensor].matrix, grad, live_[tensor].error.get(),
                     live_[tensor].q.get(), p);
  }
  void project(size_t tensor, float* p, float* q_local) override {
    enqueue_project(cublas_.get(), stream_, tensors()[tensor].matrix, live_[tensor].error.get(), p, q_local);
  }
  void decompress(size_t tensor, size_t bucket, const float* p, const float* q, float* grad) override {
    enqueue_decompress(stream_, tensors()[tensor].matrix, p, q, grad, live_[tensor].error.get(),
                       squares_.get() + 2 * bucket);
  }
  void carry_q(size_t tensor, const float* q) override {
    const PowerSgdMatrix& x = tensors()[tensor].matrix;
    copy(live_[tensor].q.get(), q, x.k * x.m);
  }

  CublasHandle cublas_;            // on the communication stream
  cudaStream_t stream_ = nullptr;  // the collective's communication stream, from the first average
  std::vector<Live> live_;         // per tensor, as tensors()
  std::shared_ptr<float> first_round_, second_round_;
  std::shared_ptr<double> squares_;  // per bucket: the error's and M's squares at its last compressed step
  std::vector<bool> measured_;       // per bucket: compressed at least once
};

}  // namespace

std::unique_ptr<PowerSgdBuckets> make_device_powersgd(const std::vector<ParamExtent>& params,
                                                      const std::vector<std::vector<int64_t>>& shapes,
                                                      const std::vector<Bucket>& buckets,
                                                      const PowerSgdOptions& options) {
  return std::make_unique<DevicePowerSgdBuckets>(params, shapes, buckets, options);
}

namespace powersgd_kernels {

void orthonormalize_columns(float* a, int64_t rows, int64_t k) {
  orthonormalize_kernel<<<1, kThreads, 0, cuda::context().stream>>>(a, rows, k);
  RT_CU_LAUNCHED();
}

std::pair<double, double> decompress(const PowerSgdMatrix& x, const float* p, const float* q, float* grad,
                                     float* error) {
  const auto squares = std::static_pointer_cast<double>(cuda::allocate_zeroed(2 * sizeof(double)));
  const cudaStream_t stream = cuda::context().stream;
  decompress_kernel<<<decompress_blocks(x.n), kThreads, 0, stream>>>(p, q, grad, error, x.n, x.m, x.k, squares.get());
  RT_CU_LAUNCHED();
  RT_CU(cudaStreamSynchronize(stream));
  double host[2];
  cuda::copy(host, false, squares.get(), true, sizeof host);
  return {host[0], host[1]};
}

double products_seconds(int64_t n, int64_t m, int64_t k, int runs) {
  RT_CHECK(n > 0 && m > 0 && k > 0 && k <= std::min(n, m) && runs > 0, "products_seconds: ", n, " x ", m, " at rank ",
           k, ", ", runs, " runs");
  const auto grad = device_floats(n * m), error = device_floats(n * m), q = device_floats(k * m),
             p = device_floats(k * n), q_local = device_floats(k * m);
  const auto squares = std::static_pointer_cast<double>(cuda::allocate_zeroed(2 * sizeof(double)));
  // Values of about 0.01 (bytes 0x3c), far from denormals; Q's columns independent enough. On the
  // compute stream, after the zeroing device_floats queued there; the copy below waits for both.
  RT_CU(cudaMemsetAsync(grad.get(), 0x3c, static_cast<size_t>(n * m) * 4, cuda::context().stream));
  std::vector<float> q_host(static_cast<size_t>(k * m));
  for (size_t i = 0; i < q_host.size(); ++i) q_host[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000 - 0.5f;
  cuda::copy(q.get(), true, q_host.data(), false, q_host.size() * 4);
  cudaStream_t stream = nullptr;
  RT_CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CublasHandle handle = make_cublas_handle();
  RT_CU(cuda::cublas().set_stream(handle.get(), stream));
  cudaEvent_t start = nullptr, stop = nullptr;
  RT_CU(cudaEventCreate(&start));
  RT_CU(cudaEventCreate(&stop));
  const PowerSgdMatrix x{n, m, k};
  std::vector<double> seconds;
  for (int run = 0; run <= runs; ++run) {  // run 0 warms up
    RT_CU(cudaEventRecord(start, stream));
    enqueue_compress(handle.get(), stream, x, grad.get(), error.get(), q.get(), p.get());
    enqueue_project(handle.get(), stream, x, error.get(), p.get(), q_local.get());
    enqueue_decompress(stream, x, p.get(), q_local.get(), grad.get(), error.get(), squares.get());
    RT_CU(cudaEventRecord(stop, stream));
    RT_CU(cudaEventSynchronize(stop));
    float ms = 0;
    RT_CU(cudaEventElapsedTime(&ms, start, stop));
    if (run > 0) seconds.push_back(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  handle.reset();  // before the stream it is bound to
  cudaStreamDestroy(stream);
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace powersgd_kernels
}  // namespace rt
