// The agreed reductions on the GPU (Note [Agreed reductions]): one block per chunk, each thread
// over a fixed stride of it, the block's threads combined in thread order by thread 0; the host
// combines the chunks' results in chunk order. Every launch has the same shape for the same n,
// so the result depends on the data alone.
#include <xxhash.h>

#include <vector>

#include "base/check.h"
#include "nn/cuda/device_api.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/agreed_reductions.h"
#include "nn/ops/cuda/make.h"

namespace rt::cuda {
namespace {

constexpr int kSumThreads = 256;

__global__ void chunk_sums_of_squares(const float* x, int64_t n, double* out) {
  __shared__ double part[kSumThreads];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kAgreedChunk;
  const int64_t end = min(begin + kAgreedChunk, n);
  double s = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += kSumThreads) s += static_cast<double>(x[i]) * x[i];
  part[threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum = 0;
    for (int t = 0; t < kSumThreads; ++t) sum += part[t];
    out[blockIdx.x] = sum;
  }
}

// Each step (h ^ word) * odd is a bijection of h, so one changed word changes the thread's hash,
// and the same holds for the threads' hashes combined.
__device__ uint64_t mix(uint64_t h, uint64_t word) { return (h ^ word) * 0x100000001b3ull; }

__global__ void chunk_hashes(const uint32_t* x, int64_t n, uint64_t* out) {
  __shared__ uint64_t part[kSumThreads];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kAgreedChunk;
  const int64_t end = min(begin + kAgreedChunk, n);
  uint64_t h = 0xcbf29ce484222325ull + threadIdx.x;
  for (int64_t i = begin + threadIdx.x; i < end; i += kSumThreads) h = mix(h, x[i]);
  part[threadIdx.x] = h;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint64_t chunk = 0xcbf29ce484222325ull;
    for (int t = 0; t < kSumThreads; ++t) chunk = mix(chunk, part[t]);
    out[blockIdx.x] = chunk;
  }
}

// Runs kernel over x's chunks into device scratch, then brings the chunks' results to the host.
template <typename In, typename T>
std::vector<T> per_chunk(void (*kernel)(const In*, int64_t, T*), const float* x, int64_t n) {
  const int64_t chunks = (n + kAgreedChunk - 1) / kAgreedChunk;
  std::vector<T> host(static_cast<size_t>(chunks));
  if (chunks == 0) return host;
  T* device = static_cast<T*>(scratch(sizeof(T) * host.size()));
  const cudaStream_t s = context().stream;
  kernel<<<static_cast<unsigned>(chunks), kSumThreads, 0, s>>>(reinterpret_cast<const In*>(x), n, device);
  RT_CU_LAUNCHED();
  RT_CU(cudaMemcpyAsync(host.data(), device, sizeof(T) * host.size(), cudaMemcpyDeviceToHost, s));
  RT_CU(cudaStreamSynchronize(s));
  return host;
}

}  // namespace

double sum_of_squares(const float* x, int64_t n) {
  double sum = 0;
  for (double p : per_chunk(chunk_sums_of_squares, x, n)) sum += p;
  return sum;
}

uint64_t fingerprint(const float* x, int64_t n) {
  const std::vector<uint64_t> hashes = per_chunk(chunk_hashes, x, n);
  return XXH3_64bits(hashes.data(), sizeof(uint64_t) * hashes.size());
}

}  // namespace rt::cuda
