// The CUDA backend's process-wide state: the GPU chosen by select_device(), one compute stream on
// it, the cuDNN and cuBLAS handles bound to that stream, and the one convolution workspace every
// op shares (ops run one at a time on the stream, so one is enough). Created on first use; kernels
// and library calls of the backend all go through context().
//
// Note [CUDA memory]: every buffer a step touches is allocated when the graph is planned: the
// parameter, gradient and activation arenas, each op's own small buffers, cuBLAS's workspace, and
// the convolutions' workspace, which grows only while ops are planned (reserve_workspace). The
// step loop allocates nothing, except that scratch() grows the first time an op needs more than
// its first 64 KiB (one per thread: the compute thread's, and the communication thread's for
// sharded LARS's norms); a training step's loss has memory of its own.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>

#include "nn/device.h"

namespace rt::cuda {

[[noreturn]] void fail(const char* library, const char* words, const char* call, const char* file, int line);

inline void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) fail("CUDA", cudaGetErrorString(e), call, file, line);
}
inline void check(cudnnStatus_t s, const char* call, const char* file, int line) {
  if (s != CUDNN_STATUS_SUCCESS) fail("cuDNN", cudnnGetErrorString(s), call, file, line);
}
void check(cublasStatus_t s, const char* call, const char* file, int line);

// Every CUDA, cuDNN and cuBLAS call goes through RT_CU: a failure becomes rt::Error naming the
// library, its own words and the call.
#define RT_CU(call) ::rt::cuda::check((call), #call, __FILE__, __LINE__)
// After each kernel launch: launch errors (bad configuration, no kernel image for this GPU).
#define RT_CU_LAUNCHED() RT_CU(cudaGetLastError())

struct Context {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
};

// The calling thread's context: the process-wide one, or a StreamScope's.
Context& context();

// Note [Second stream]: while a StreamScope lives, the backend's kernels launched from its thread
// go to `stream`, with scratch() memory of that thread's own, so that work enqueued on another
// stream (the sharded update on the communication stream, Note [Device collectives]) neither
// races the compute stream nor shares its temporaries. Plain kernels only: the cuDNN and cuBLAS
// handles are bound to the compute stream, and inside a scope they are null, so a library call
// there fails loudly instead of running on the wrong stream.
class StreamScope {
 public:
  explicit StreamScope(cudaStream_t stream);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  Context* outer_;
  Context own_;
};

// Plan time: the shared workspace will hold at least `bytes`. Run time: its current address.
void reserve_workspace(size_t bytes);
void* workspace();
size_t workspace_bytes();

// Device memory of at least `bytes` for one op call's temporaries; valid until the next scratch().
void* scratch(size_t bytes);

// Grid size for n elements at `threads` per block, capped so huge tensors loop in the kernel.
inline unsigned blocks_for(int64_t n, int threads = 256) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 65535 * 16 ? (b > 0 ? b : 1) : 65535 * 16);
}

// Inside a kernel launched with blocks_for(n) blocks: element i of n, grid-strided so any grid covers all.
#define RT_FOR_EACH_ELEMENT(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{gridDim.x} * blockDim.x)

}  // namespace rt::cuda
