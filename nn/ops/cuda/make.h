// The CUDA backend's op factories, called only by nn/ops/dispatch.cpp. Every tensor they take
// and make is plain (NCHW, (N, K)) float32 on the GPU; see Note [CUDA memory] in nn/cuda/runtime.h.
#pragma once

#include "nn/ops/backend_ops.h"

RT_DECLARE_BACKEND_OPS(cuda)
