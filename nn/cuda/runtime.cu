#include "nn/cuda/runtime.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>

#include "base/check.h"
#include "nn/cuda/cublas_library.h"
#include "nn/cuda/device_api.h"

namespace rt::cuda {
namespace {

int g_selected = -1;  // select_device()'s choice; -1: device 0 on first use

struct Buffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  int64_t moves = 0;  // reallocations: a recording holds the address it saw
  void grow_to(size_t wanted) {
    if (wanted <= bytes) return;
    if (ptr) RT_CU(cudaFree(ptr));
    ptr = nullptr;
    RT_CU(cudaMalloc(&ptr, wanted));
    bytes = wanted;
    ++moves;
  }
};

// CudaGraph's recording: the executable graph, and the workspace's moves when it was made.
// (Recorded work uses no scratch(): ops that keep memory of their own are what a step records.)
struct Recording {
  cudaGraphExec_t exec = nullptr;
  int64_t workspace_moves = 0;
  ~Recording() {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

Buffer g_workspace, g_scratch, g_cublas_workspace;

// cuBLAS's own workspace, ours so that it allocates none while a step is recorded (Note [CUDA
// graph steps] in nn/device.h); NVIDIA recommends 32 MiB for Hopper, more than earlier GPUs want.
constexpr size_t kCublasWorkspace = size_t{32} << 20;

Context make_context() {
  Context c;
  c.device = g_selected < 0 ? 0 : g_selected;
  RT_CU(cudaSetDevice(c.device));
  RT_CU(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  RT_CU(cudnnCreate(&c.cudnn));
  RT_CU(cudnnSetStream(c.cudnn, c.stream));
  RT_CU(cublas().create(&c.cublas));
  RT_CU(cublas().set_stream(c.cublas, c.stream));
  g_cublas_workspace.grow_to(kCublasWorkspace);
  RT_CU(cublas().set_workspace(c.cublas, g_cublas_workspace.ptr, g_cublas_workspace.bytes));
  // The default math mode, so that the compute type each call names decides alone (the linear
  // op's, from PlanContext::precision: CUBLAS_COMPUTE_32F_PEDANTIC under fp32,
  // CUBLAS_COMPUTE_32F_FAST_TF32 under TF32). A pedantic handle beside a call asking for TF32 leaves
  // the outcome to how cuBLAS ranks the two, which only a timing could show
  // (GpuParity.LinearTf32IsFasterThanFp32).
  RT_CU(cublas().set_math_mode(c.cublas, CUBLAS_DEFAULT_MATH));
  return c;
}

}  // namespace

void fail(const char* library, const char* words, const char* call, const char* file, int line) {
  throw_check_failure(file, line, str_cat(library, " error: ", words, " (in ", call, ")"));
}

void check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) fail("cuBLAS", cublas().status_string(s), call, file, line);
}

static thread_local Context* t_scoped = nullptr;  // the innermost StreamScope's context
static thread_local Buffer t_scratch;             // scratch() inside a StreamScope

Context& context() {
  if (t_scoped) return *t_scoped;
  static Context c = make_context();
  return c;
}

StreamScope::StreamScope(cudaStream_t stream) : outer_(t_scoped), own_{context().device, stream, nullptr, nullptr} {
  t_scoped = &own_;
}

StreamScope::~StreamScope() { t_scoped = outer_; }

void reserve_workspace(size_t bytes) {
  context();
  g_workspace.grow_to(bytes);
}
void* workspace() { return g_workspace.ptr; }
size_t workspace_bytes() { return g_workspace.bytes; }

// A scratch buffer starts at 64 KiB, which holds the agreed reductions' per-chunk results for
// tensors of up to 512 M elements, the finite flag and a loss of thousands of rows: grown from the
// 4 bytes of a first finite check, it would be freed and made again in the first steps, and cudaFree
// waits for the whole device, the other stream's collectives included (sharded LARS's norms run on
// the communication stream, beside its reduce-scatters).
constexpr size_t kScratchFloor = size_t{64} << 10;

void* scratch(size_t bytes) {
  context();
  Buffer& b = t_scoped ? t_scratch : g_scratch;
  b.grow_to(std::max(bytes, kScratchFloor));
  return b.ptr;
}

bool usable(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports no GPU";
    cudaGetLastError();  // clear the sticky-free error so later queries start clean
    return false;
  }
  return true;
}

int visible_devices() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  RT_CHECK(e == cudaSuccess, "device = \"cuda\" but CUDA cannot use a GPU here: ", cudaGetErrorString(e));
  return count;
}

std::string device_uuid() {
  context();
  cudaDeviceProp p{};
  RT_CU(cudaGetDeviceProperties(&p, g_selected < 0 ? 0 : g_selected));
  static const char kDigits[] = "0123456789abcdef";
  std::string hex = "GPU-";
  for (char c : p.uuid.bytes) {
    const auto byte = static_cast<unsigned char>(c);
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 15];
  }
  return hex;
}

void select_device(int index) {
  const int count = visible_devices();
  RT_CHECK(index >= 0 && index < count, "GPU ", index, " was asked for, but this process sees ", count, " GPU(s)");
  g_selected = index;
  RT_CU(cudaSetDevice(index));
}

std::shared_ptr<void> allocate_zeroed(size_t bytes) {
  context();
  const size_t rounded = (bytes + 255) / 256 * 256;
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, rounded == 0 ? 256 : rounded);
  if (e != cudaSuccess) {
    size_t free_bytes = 0, total = 0;
    cudaGetLastError();
    cudaMemGetInfo(&free_bytes, &total);
    RT_CHECK(false, "out of GPU memory allocating ", bytes, " bytes (", free_bytes >> 20, " MiB free of ", total >> 20,
             " MiB): ", cudaGetErrorString(e));
  }
  RT_CU(cudaMemsetAsync(p, 0, rounded == 0 ? 256 : rounded, context().stream));
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

std::shared_ptr<void> allocate_pinned(size_t bytes) {
  context();
  void* p = nullptr;
  const size_t size = bytes == 0 ? 1 : bytes;
  const cudaError_t e = cudaMallocHost(&p, size);
  if (e != cudaSuccess) {
    cudaGetLastError();
    RT_CHECK(false, "cannot page-lock ", bytes, " bytes of host memory: ", cudaGetErrorString(e));
  }
  std::memset(p, 0, size);
  return std::shared_ptr<void>(p, [](void* q) { cudaFreeHost(q); });
}

void copy(void* dst, bool dst_on_gpu, const void* src, bool src_on_gpu, size_t bytes) {
  const cudaMemcpyKind kind = dst_on_gpu ? (src_on_gpu ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                         : (src_on_gpu ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  const cudaStream_t s = context().stream;
  RT_CU(cudaMemcpyAsync(dst, src, bytes, kind, s));
  RT_CU(cudaStreamSynchronize(s));
}

void zero(void* dst, size_t bytes) { RT_CU(cudaMemsetAsync(dst, 0, bytes, context().stream)); }

void synchronize() { RT_CU(cudaStreamSynchronize(context().stream)); }

namespace {

[[noreturn]] void fail_to_record(const std::string& why) {
  cudaGetLastError();  // the failure is said here, not again by the next launch's check
  throw Error(
      str_cat("the training step's device work could not be recorded as a CUDA graph (train.cuda_graph; "
              "set it to false to issue each step's calls): ",
              why));
}

}  // namespace

// Thread-local capture: unsafe API calls of other threads (a data loader's page-locking) do not
// invalidate it. Work another thread puts on this stream meanwhile would still join the
// recording: the trainer records only while its communication thread is idle (Note [CUDA
// graph steps] in nn/device.h).
std::shared_ptr<void> record(const std::function<void()>& enqueue) {
  const cudaStream_t s = context().stream;
  RT_CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  // Whatever enqueue throws, the capture ends, so the stream works again.
  try {
    enqueue();
  } catch (const std::exception& e) {
    if (cudaStreamEndCapture(s, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
    fail_to_record(e.what());
  } catch (...) {
    if (cudaStreamEndCapture(s, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
    throw;
  }
  // A call whose own error went unchecked surfaces here, as an invalidated capture.
  const cudaError_t ended = cudaStreamEndCapture(s, &graph);
  if (ended != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    fail_to_record(str_cat("cudaStreamEndCapture: ", cudaGetErrorString(ended)));
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);  // the executable graph is independent of it
  if (instantiated != cudaSuccess) fail_to_record(str_cat("cudaGraphInstantiate: ", cudaGetErrorString(instantiated)));
  auto r = std::make_shared<Recording>();
  r->exec = exec;
  r->workspace_moves = g_workspace.moves;
  RT_CU(cudaGraphUpload(exec, s));  // so the first replay does not pay for moving the graph to the GPU
  return r;
}

void replay(void* recording) {
  const Recording& r = *static_cast<const Recording*>(recording);
  // Only planning grows the workspace; planning after a recording would move it from under the
  // recorded kernels, which would then write freed memory.
  RT_CHECK(r.workspace_moves == g_workspace.moves,
           "internal error: the shared GPU workspace was reallocated after a step was recorded as a CUDA graph "
           "(train.cuda_graph)");
  RT_CU(cudaGraphLaunch(r.exec, context().stream));
}

}  // namespace rt::cuda
