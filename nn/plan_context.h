// The run-wide choices every layer is planned with (Layer::plan, Graph::plan): how convolutions
// compute, what the CUDA backend computes in, and whether convolutions try cuDNN's graph API. The
// config holds them typed (train.conv_algorithm, train.precision, train.cudnn_graph);
// an op reads them when it is made, so two graphs planned with different choices coexist.
#pragma once

#include "base/run_settings.h"

namespace rt {

// How convolutions compute (train.conv_algorithm). "direct" is the exact reference: its results
// match PyTorch's float32 convolutions. "winograd" uses Winograd's minimal filtering (F(4x4, 3x3):
// about 4x fewer multiplications) for 3x3 stride-1 convolutions where the backend has it (on the
// CPU under bf16, our F(2x2, 3x3) where it pays: Note [bf16 Winograd]), and direct everywhere
// else; it is faster but its rounding error grows with the inputs' mean, which batch norm then
// amplifies (docs/models.md, "Convolution algorithm").
//
// What the CUDA backend computes in (train.precision); see Note [Mixed precision] in
// nn/ops/cuda/gpu_layout.h. fp32: float32 throughout. tf32: float32 storage, but convolutions and
// matrix products may round their inputs to TF32 on tensor cores. bf16 / fp16: activations and
// their gradients between convolutions in 16 bits (NHWC), parameters and everything else float32,
// fully connected layers in TF32. The CPU computes in fp32, or in bf16 as Note [CPU bfloat16] in
// nn/cpu_bf16.h says (tf32 and fp16 are the GPU's; the app refuses them there).
//
// Whether CUDA convolutions try cuDNN's graph API (train.cudnn_graph; Note [cuDNN graph API] in
// nn/ops/cuda/cudnn_graph.h): "off" never, "where_faster" where its plan timed faster than the
// legacy algorithm, "always" wherever it has a plan (what the GPU suite checks).

// Whether matrix products and convolutions may round float32 inputs to TF32: all but fp32.
inline bool allows_tf32(Precision precision) { return precision != Precision::kFp32; }

struct BatchNormGroup;  // nn/layers/group_batch_norm.h

struct PlanContext {
  ConvAlgorithm conv_algorithm = ConvAlgorithm::kDirect;
  Precision precision = Precision::kFp32;
  CudnnGraphUse cudnn_graph = CudnnGraphUse::kNever;
  // train.bn_group: the ranks each batch-norm layer pools its training statistics over (Note
  // [Group batch norm]); null for a rank's own.
  const BatchNormGroup* bn_group = nullptr;
  // Whether batch norm applies the ReLU that follows it (Note [ReLU in batch norm] in
  // nn/graph.cpp); off only to check it against the two layers apart.
  bool relu_in_batch_norm = true;
};

}  // namespace rt
