// The CUDA backend's op factories, called only by nn/ops/dispatch.cpp. Tensors are plain float32
// (NCHW, (N, K)), or 16-bit NHWC activations under mixed precision (Note [Mixed precision] in
// nn/ops/cuda/gpu_layout.h); see Note [CUDA memory] in nn/cuda/runtime.h.
#pragma once

#include "nn/ops/backend_ops.h"

RT_DECLARE_BACKEND_OPS(cuda)
