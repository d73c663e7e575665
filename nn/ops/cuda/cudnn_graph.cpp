// See cudnn_graph.h and Note [cuDNN graph API] there. Descriptors are made with cudnnBackend*
// calls: set each attribute, then finalize. Tensors are named by unique ids: the input x (or its
// gradient) 1, the weights (or theirs) 2, the output y (or its gradient) 3.
#include "nn/ops/cuda/cudnn_graph.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/half_float.h"
#include "nn/cuda/runtime.h"
#include "nn/device.h"

namespace rt::cuda {
namespace {

constexpr int64_t kX = 1, kW = 2, kY = 3;
// Engine configurations finalized and timed per problem, in the heuristics' order: finalizing one
// may compile kernels at run time (tens of ms), and each distinct shape and direction pays it once.
constexpr size_t kMostConfigs = 8;

void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
         const void* values) {
  RT_CU(cudnnBackendSetAttribute(d, name, type, count, values));
}

// Strides of (N, C, H, W) dimensions stored NHWC or NCHW; for (K, C/g, R, S) weights, KRSC or KCRS.
std::array<int64_t, 4> strides_of(const std::array<int64_t, 4>& d, bool nhwc) {
  if (nhwc) return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
  return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
}

// The engine's numerical notes, in the terms engine_allowed judges.
EngineNotes notes_of(cudnnBackendDescriptor_t engine) {
  std::vector<cudnnBackendNumericalNote_t> notes(CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
  int64_t n = 0;
  EngineNotes e;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes.data()) != CUDNN_STATUS_SUCCESS)
    return e;
  e.known = true;
  for (int64_t i = 0; i < n; ++i) switch (notes[static_cast<size_t>(i)]) {
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
        e.tensor_cores = true;
        break;
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
        e.down_converts_inputs = true;
        break;
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
        e.reduced_precision_sums = true;
        break;
      case CUDNN_NUMERICAL_NOTE_FFT:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
        e.transform = true;
        break;
      default:
        break;
    }
  return e;
}

// The attribute names of one direction's operation: its three tensors in the order x (or dx),
// w (or dw), y (or dy), then the convolution, alpha and beta.
struct OperationNames {
  cudnnBackendDescriptorType_t type;
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
};

OperationNames operation_names(ConvDirection d) {
  switch (d) {
    case ConvDirection::kForward:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
    case ConvDirection::kBackwardData:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
    case ConvDirection::kBackwardFilter:
      break;
  }
  return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
}

struct Scoped {
  cudnnBackendDescriptor_t d = nullptr;
  explicit Scoped(cudnnBackendDescriptorType_t type) { RT_CU(cudnnBackendCreateDescriptor(type, &d)); }
  ~Scoped() {
    if (d) cudnnBackendDestroyDescriptor(d);
  }
  Scoped(const Scoped&) = delete;
  Scoped& operator=(const Scoped&) = delete;
  cudnnBackendDescriptor_t release() { return std::exchange(d, nullptr); }
};

// A finalized variant pack: data pointers by unique id (x, w, y), then the workspace.
cudnnBackendDescriptor_t make_pack(const std::array<void*, 4>& pointers) {
  Scoped pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const int64_t uids[3] = {kX, kW, kY};
  set(pack.d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers.data());
  set(pack.d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  set(pack.d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &pointers[3]);
  RT_CU(cudnnBackendFinalize(pack.d));
  return pack.release();
}

// Appends every engine configuration heuristics `mode` suggests for the graph, best first;
// nothing where that mode has no answer for it.
void append_suggestions(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode,
                        std::vector<std::unique_ptr<Scoped>>& configs) {
  const cudnnBackendAttributeType_t D = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  Scoped heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set(heur.d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, D, 1, &graph);
  set(heur.d, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (cudnnBackendFinalize(heur.d) != CUDNN_STATUS_SUCCESS) return;
  int64_t count = 0;
  RT_CU(cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, D, 0, &count, nullptr));
  if (count <= 0) return;
  const size_t first = configs.size();
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.push_back(std::make_unique<Scoped>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back()->d);
  }
  int64_t got = 0;
  RT_CU(cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, D, count, &got, raw.data()));
  configs.resize(first + static_cast<size_t>(got));
}

// Fills `bytes` of device memory with `word` repeated (a 16-bit tail takes its low half, which
// for 16-bit types is the same value): one word from the host, then copies doubling on the device.
void fill_with_word(char* p, size_t bytes, uint32_t word, cudaStream_t stream) {
  size_t done = std::min<size_t>(bytes, sizeof word);
  if (done == 0) return;
  RT_CU(cudaMemcpyAsync(p, &word, done, cudaMemcpyHostToDevice, stream));
  RT_CU(cudaStreamSynchronize(stream));  // `word` lives on this stack frame
  while (done < bytes) {
    const size_t n = std::min(done, bytes - done);
    RT_CU(cudaMemcpyAsync(p + done, p, n, cudaMemcpyDeviceToDevice, stream));
    done += n;
  }
}

size_t bytes_of(const std::array<int64_t, 4>& d, cudnnDataType_t t) {
  return static_cast<size_t>(d[0] * d[1] * d[2] * d[3]) * (t == CUDNN_DATA_FLOAT ? 4 : 2);
}

}  // namespace

cudnnBackendDescriptor_t CudnnGraphPlan::make(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = nullptr;
  RT_CU(cudnnBackendCreateDescriptor(type, &d));
  owned_.push_back(d);
  return d;
}

CudnnGraphPack::~CudnnGraphPack() {
  if (d_) cudnnBackendDestroyDescriptor(d_);
}

cudnnBackendDescriptor_t CudnnGraphPack::for_pointers(const std::array<void*, 4>& pointers) {
  if (d_ && pointers == pointers_) return d_;
  if (d_) cudnnBackendDestroyDescriptor(d_);
  d_ = nullptr;
  d_ = make_pack(pointers);
  pointers_ = pointers;
  return d_;
}

CudnnGraphPlan::~CudnnGraphPlan() {
  for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) cudnnBackendDestroyDescriptor(*it);
}

ConvTimer::ConvTimer(const CudnnGraphProblem& p) {
  const cudaStream_t stream = context().stream;
  // 0.01 in the problem's type, twice over for 16-bit types: one 32-bit word of the fill.
  const uint32_t word = [&]() -> uint32_t {
    const float v = 0.01f;
    if (p.io_type == CUDNN_DATA_FLOAT) return std::bit_cast<uint32_t>(v);
    const uint32_t half = p.io_type == CUDNN_DATA_BFLOAT16 ? float_to_bf16(v) : float_to_fp16(v);
    return half << 16 | half;
  }();
  const auto scratch_of = [&](const std::array<int64_t, 4>& dims) {
    const size_t bytes = bytes_of(dims, p.io_type);
    std::shared_ptr<void> b = allocate_zeroed(Device::kCuda, bytes);
    fill_with_word(static_cast<char*>(b.get()), bytes, word, stream);
    return b;
  };
  x_ = scratch_of(p.x), w_ = scratch_of(p.w), y_ = scratch_of(p.y);
  RT_CU(cudaEventCreate(&start_));
  if (cudaEventCreate(&stop_) != cudaSuccess) {
    cudaEventDestroy(start_);
    RT_CHECK(false, "cannot create a CUDA event to time convolutions");
  }
}

ConvTimer::~ConvTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

std::optional<float> ConvTimer::timed(const Run& run, int runs) {
  const cudaStream_t stream = context().stream;
  RT_CU(cudaEventRecord(start_, stream));
  for (int r = 0; r < runs; ++r)
    if (!run(x_.get(), w_.get(), y_.get(), workspace_.get())) return std::nullopt;
  RT_CU(cudaEventRecord(stop_, stream));
  RT_CU(cudaEventSynchronize(stop_));
  float ms = 0;
  RT_CU(cudaEventElapsedTime(&ms, start_, stop_));
  return ms / static_cast<float>(runs);
}

std::optional<float> ConvTimer::mean_ms(const Run& run, size_t workspace_bytes) {
  if (!workspace_ || workspace_bytes > workspace_bytes_) {
    workspace_.reset();  // the old one goes first: both may not fit
    workspace_bytes_ = 0;
    try {
      workspace_ = allocate_zeroed(Device::kCuda, std::max<size_t>(workspace_bytes, 1));
    } catch (const Error&) {
      return std::nullopt;  // out of GPU memory: this candidate cannot run here, the next may
    }
    workspace_bytes_ = workspace_bytes;
  }
  if (!run(x_.get(), w_.get(), y_.get(), workspace_.get())) return std::nullopt;  // warm-up
  std::optional<float> ms = timed(run, 3);
  if (ms && *ms * 3 < 1.0f) ms = timed(run, std::min(100, static_cast<int>(1.0f / std::max(*ms, 1e-3f)) + 1));
  return ms;
}

std::unique_ptr<CudnnGraphPlan> CudnnGraphPlan::best(const CudnnGraphProblem& p, size_t workspace_limit,
                                                     ConvTimer& timer) {
  cudnnHandle_t handle = context().cudnn;
  std::unique_ptr<CudnnGraphPlan> g(new CudnnGraphPlan);
  g->direction_ = p.direction;

  const auto tensor = [&](int64_t uid, const std::array<int64_t, 4>& dims) {
    cudnnBackendDescriptor_t t = g->make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const std::array<int64_t, 4> strides = strides_of(dims, p.nhwc);
    const int64_t alignment = 16;  // every tensor here starts 64-byte aligned (nn/memory_plan.h)
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &p.io_type);
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    RT_CU(cudnnBackendFinalize(t));
    return t;
  };
  cudnnBackendDescriptor_t x = tensor(kX, p.x), w = tensor(kW, p.w), y = tensor(kY, p.y);

  cudnnBackendDescriptor_t conv = g->make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2;
  set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, p.dilation.data());
  set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, p.stride.data());
  set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, p.pad.data());
  set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, p.pad.data());
  RT_CU(cudnnBackendFinalize(conv));

  const float one = 1.0f, zero = 0.0f;
  const cudnnBackendAttributeType_t D = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  const OperationNames names = operation_names(p.direction);
  cudnnBackendDescriptor_t op = g->make(names.type);
  set(op, names.x, D, 1, &x);
  set(op, names.w, D, 1, &w);
  set(op, names.y, D, 1, &y);
  set(op, names.conv, D, 1, &conv);
  set(op, names.alpha, CUDNN_TYPE_FLOAT, 1, &one);
  set(op, names.beta, CUDNN_TYPE_FLOAT, 1, &zero);
  RT_CU(cudnnBackendFinalize(op));

  cudnnBackendDescriptor_t graph = g->make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, D, 1, &op);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  RT_CU(cudnnBackendFinalize(graph));

  // Walk the heuristics' suggestions, best first (the fallback list where mode A yields nothing
  // usable), and finalize a plan for each allowed one within the workspace limit, up to
  // kMostConfigs: filtering before the cut, so a precision that rules out the top suggestions
  // (fp32 without TF32) still gets its share.
  struct Candidate {
    cudnnBackendDescriptor_t plan;
    size_t workspace;
    int64_t engine;
    size_t config;  // index in configs
  };
  std::vector<std::unique_ptr<Scoped>> configs;
  std::vector<Candidate> candidates;
  std::vector<std::unique_ptr<Scoped>> unused_plans;
  // Timing allocates each candidate's workspace beside the model's memory and the timer's scratch
  // tensors: never more than the GPU has free now, less a margin.
  size_t free_bytes = 0, total_bytes = 0;
  RT_CU(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t margin = size_t{256} << 20;
  const size_t most_workspace_allowed = std::min(workspace_limit, free_bytes > margin ? free_bytes - margin : 0);
  for (const cudnnBackendHeurMode_t heur_mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    if (!candidates.empty()) break;
    const size_t first = configs.size();
    append_suggestions(graph, heur_mode, configs);
    for (size_t c = first; c < configs.size() && candidates.size() < kMostConfigs; ++c) {
      const auto& config = configs[c];
      Scoped engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      int64_t n = 0;
      if (cudnnBackendGetAttribute(config->d, CUDNN_ATTR_ENGINECFG_ENGINE, D, 1, &n, &engine.d) != CUDNN_STATUS_SUCCESS)
        continue;
      if (!engine_allowed(notes_of(engine.d), p.rules)) continue;
      // What the configuration says it needs, before finalizing (which may compile kernels).
      int64_t config_ws = 0;
      if (cudnnBackendGetAttribute(config->d, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                   &config_ws) == CUDNN_STATUS_SUCCESS &&
          static_cast<size_t>(config_ws) > most_workspace_allowed)
        continue;
      int64_t index = -1;
      cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index);
      auto plan = std::make_unique<Scoped>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      set(plan->d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
      set(plan->d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, D, 1, &config->d);
      if (cudnnBackendFinalize(plan->d) != CUDNN_STATUS_SUCCESS) continue;
      int64_t ws = 0;
      RT_CU(cudnnBackendGetAttribute(plan->d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws));
      if (static_cast<size_t>(ws) > most_workspace_allowed) continue;
      candidates.push_back({plan->d, static_cast<size_t>(ws), index, c});
      unused_plans.push_back(std::move(plan));
    }
  }
  if (candidates.empty()) return nullptr;

  size_t best_at = candidates.size();
  float best_ms = 0;
  CudnnGraphPack pack;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::optional<float> ms = timer.mean_ms(
        [&](void* x, void* w, void* y, void* ws) {
          return cudnnBackendExecute(handle, candidates[i].plan, pack.for_pointers({x, w, y, ws})) ==
                 CUDNN_STATUS_SUCCESS;
        },
        candidates[i].workspace);
    if (ms && (best_at == candidates.size() || *ms < best_ms)) best_at = i, best_ms = *ms;
  }
  if (best_at == candidates.size()) return nullptr;

  // Keep the winner, with the configuration and graph it was made from; the rest go out of scope.
  g->owned_.push_back(configs[candidates[best_at].config]->d);
  configs[candidates[best_at].config]->d = nullptr;
  g->plan_ = candidates[best_at].plan;
  g->owned_.push_back(unused_plans[best_at]->d);
  unused_plans[best_at]->d = nullptr;
  g->ms_ = best_ms;
  g->workspace_ = candidates[best_at].workspace;
  g->engine_ = str_cat("engine ", candidates[best_at].engine);
  return g;
}

void CudnnGraphPlan::run(CudnnGraphPack& pack, const void* in_a, const void* in_b, void* out, void* workspace) const {
  void* a = const_cast<void*>(in_a);
  void* b = const_cast<void*>(in_b);
  std::array<void*, 4> pointers{};  // by unique id: x (or dx), w (or dw), y (or dy); the workspace
  switch (direction_) {
    case ConvDirection::kForward:
      pointers = {a, b, out, workspace};
      break;
    case ConvDirection::kBackwardData:
      pointers = {out, b, a, workspace};
      break;
    case ConvDirection::kBackwardFilter:
      pointers = {a, out, b, workspace};
      break;
  }
  for (void* q : pointers)
    RT_ASSERT(reinterpret_cast<uintptr_t>(q) % 16 == 0);  // the plan was made for 16-byte-aligned tensors
  RT_CU(cudnnBackendExecute(context().cudnn, plan_, pack.for_pointers(pointers)));
}

}  // namespace rt::cuda
