// One direction of a 16-bit NHWC convolution through cuDNN's graph (backend) API: an operation
// graph of one convolution node, the engine configurations cuDNN's heuristics suggest for it,
// each finalized and timed once, the fastest kept. See Note [cuDNN graph API].
//
// Note [cuDNN graph API]: the legacy API (conv2d.cu) offers a fixed list of algorithms. On an
// H100 its bf16 NHWC convolutions ran no faster than TF32's (ResNet-101's 1x1 backward 0.41 ms
// against 0.33), while PyTorch, which calls cuDNN through the graph API, ran the whole bf16 step
// 1.7 times faster than ringtrain. The graph API reaches every engine cuDNN has. It is tried only
// with RINGTRAIN_CUDNN_GRAPH=1 (experimental: written in a session whose GPU time was spent), for
// 16-bit convolutions, and a plan runs only where it timed faster than the legacy algorithm
// (RINGTRAIN_CUDNN_GRAPH=always: wherever there is one, as the GPU suite checks it). Engines that
// reduce in 16 bits are never used; FFT and Winograd ones only with conv_algorithm "winograd".
#pragma once

#include <cudnn.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace rt::cuda {

enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

// The problem of one direction. Tensors are (N, C, H, W) activations and (K, C/groups, R, S)
// weights, all stored NHWC (KRSC for weights) in `io_type`, with float32 accumulation.
struct ConvGraphProblem {
  ConvDirection direction = ConvDirection::kForward;
  cudnnDataType_t io_type = CUDNN_DATA_BFLOAT16;
  std::array<int64_t, 4> x{}, w{}, y{};
  std::array<int64_t, 2> pad{}, stride{1, 1}, dilation{1, 1};
  bool allow_transforms = false;  // FFT and Winograd engines (conv_algorithm "winograd")
};

class ConvGraphPlan {
 public:
  // The fastest engine within `workspace_limit` bytes, timed on scratch buffers; nullptr when no
  // engine cuDNN suggests finalizes for the problem.
  static std::unique_ptr<ConvGraphPlan> best(const ConvGraphProblem& problem, size_t workspace_limit);
  ~ConvGraphPlan();
  ConvGraphPlan(const ConvGraphPlan&) = delete;
  ConvGraphPlan& operator=(const ConvGraphPlan&) = delete;

  float ms() const { return ms_; }
  size_t workspace() const { return workspace_; }
  const std::string& engine() const { return engine_; }  // for messages: "engine 12"

  // Forward: (x, w) -> y. Backward data: (dy, w) -> dx. Backward filter: (x, dy) -> dw. On the
  // context's stream, with the shared workspace.
  void run(const void* in_a, const void* in_b, void* out, void* workspace);

 private:
  ConvGraphPlan() = default;
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type);  // owned by this plan

  std::vector<cudnnBackendDescriptor_t> owned_;  // the graph's descriptors, which the plan refers to
  cudnnBackendDescriptor_t plan_ = nullptr;
  cudnnBackendDescriptor_t pack_ = nullptr;  // the variant pack for the pointers last run
  std::array<void*, 4> pack_pointers_{};
  ConvDirection direction_ = ConvDirection::kForward;
  float ms_ = 0;
  size_t workspace_ = 0;
  std::string engine_;
};

}  // namespace rt::cuda
