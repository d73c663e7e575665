// One direction of a convolution through cuDNN's graph (backend) API: an operation graph of one
// convolution node, the engine configurations cuDNN's heuristics suggest for it, each finalized
// and timed once, the fastest kept. See Note [cuDNN graph API].
//
// Note [cuDNN graph API]: the legacy API (conv2d.cu) offers a fixed list of algorithms. On an
// H100 its bf16 NHWC convolutions ran no faster than TF32's (ResNet-101's 1x1 backward 0.41 ms
// against 0.33), while PyTorch, which calls cuDNN through the graph API, ran the whole bf16 step
// 1.7 times faster than ringtrain, and its TF32 step 1.3 times. The graph API reaches every engine
// cuDNN has. It is tried only where train.cudnn_graph asks (opt-in; its state is in
// docs/status.md), at every precision: with "where_faster" a plan runs only where it timed faster
// than the legacy algorithm timed alike (ConvTimer: the same data and method); with "always"
// wherever there is one, as the GPU suite checks it. Which engines may be timed at all is engine_allowed's rule (algorithm_choice.h): float32
// sums always, TF32 products on float32 data only where train.precision allows them, FFT and
// Winograd only with conv_algorithm "winograd".
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/ops/cuda/algorithm_choice.h"

namespace rt::cuda {

enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

// The problem of one direction. Tensors are (N, C, H, W) activations and (K, C/groups, R, S)
// weights (the graph API reads the group count off C/groups), all in `io_type` and stored NHWC
// (KRSC for weights) or NCHW (KCRS), with float32 accumulation.
struct CudnnGraphProblem {
  ConvDirection direction = ConvDirection::kForward;
  cudnnDataType_t io_type = CUDNN_DATA_BFLOAT16;
  bool nhwc = true;
  std::array<int64_t, 4> x{}, w{}, y{};
  std::array<int64_t, 2> pad{}, stride{1, 1}, dilation{1, 1};
  EngineRules rules;  // which engines may be timed
};

// The pointers one call site runs a plan with, as cuDNN's variant pack: made again only when they
// change. Layers of one shape share a plan but each keeps its own pack.
class CudnnGraphPack {
 public:
  CudnnGraphPack() = default;
  ~CudnnGraphPack();
  CudnnGraphPack(const CudnnGraphPack&) = delete;
  CudnnGraphPack& operator=(const CudnnGraphPack&) = delete;

  // The pack for these pointers, by unique id x (or dx), w (or dw), y (or dy), then the workspace.
  cudnnBackendDescriptor_t for_pointers(const std::array<void*, 4>& pointers);

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
  std::array<void*, 4> pointers_{};
};

// Times the candidates of one direction alike, legacy algorithms and graph-API plans: on scratch
// tensors of the problem's shapes holding 0.01 in their own type (all-zero data would flatter
// tensor cores' power draw; small values keep fp16's sums finite), one run to warm up, then the
// mean of at least three runs, and of enough for a millisecond where runs are short, so host
// overhead per run does not decide. On the context's stream.
class ConvTimer {
 public:
  explicit ConvTimer(const CudnnGraphProblem& problem);
  ~ConvTimer();
  ConvTimer(const ConvTimer&) = delete;
  ConvTimer& operator=(const ConvTimer&) = delete;

  // One run of a candidate on (x, w, y) by role (for backward data x is dx and y is dy; for
  // backward filter w is dw) with `workspace`; false where the library refused it.
  using Run = std::function<bool(void* x, void* w, void* y, void* workspace)>;
  // Mean milliseconds per run; nullopt where a run was refused or its workspace does not fit.
  std::optional<float> mean_ms(const Run& run, size_t workspace_bytes);

 private:
  std::optional<float> timed(const Run& run, int runs);

  std::shared_ptr<void> x_, w_, y_, workspace_;
  size_t workspace_bytes_ = 0;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

class CudnnGraphPlan {
 public:
  // The fastest engine within `workspace_limit` bytes (and the GPU's free memory), as `timer`
  // times it; nullptr when no engine cuDNN suggests finalizes for the problem; rt::Error where
  // cuDNN refuses the problem itself or memory runs out (conv2d.cu then keeps the legacy algorithm).
  static std::unique_ptr<CudnnGraphPlan> best(const CudnnGraphProblem& problem, size_t workspace_limit,
                                              ConvTimer& timer);
  ~CudnnGraphPlan();
  CudnnGraphPlan(const CudnnGraphPlan&) = delete;
  CudnnGraphPlan& operator=(const CudnnGraphPlan&) = delete;

  float ms() const { return ms_; }  // as the ConvTimer timed it
  size_t workspace() const { return workspace_; }
  const std::string& engine() const { return engine_; }  // for messages: "engine 12"

  // Forward: (x, w) -> y. Backward data: (dy, w) -> dx. Backward filter: (x, dy) -> dw. On the
  // context's stream, with the shared workspace, through the call site's own pack.
  void run(CudnnGraphPack& pack, const void* in_a, const void* in_b, void* out, void* workspace) const;

 private:
  CudnnGraphPlan() = default;
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type);  // owned by this plan

  std::vector<cudnnBackendDescriptor_t> owned_;  // the graph's descriptors, which the plan refers to
  cudnnBackendDescriptor_t plan_ = nullptr;
  ConvDirection direction_ = ConvDirection::kForward;
  float ms_ = 0;
  size_t workspace_ = 0;
  std::string engine_;
};

}  // namespace rt::cuda
