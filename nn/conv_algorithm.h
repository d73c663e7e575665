// How convolutions compute, chosen per run (train.conv_algorithm). "direct" is the exact
// reference: its results match PyTorch's float32 convolutions. "winograd" uses Winograd's
// minimal filtering (F(4x4, 3x3): about 4x fewer multiplications) for 3x3 stride-1 convolutions
// where the backend has it, and direct everywhere else; it is faster but its rounding error
// grows with the inputs' mean, which batch norm then amplifies (docs/models.md, "Convolution algorithm").
#pragma once

#include "base/run_settings.h"  // ConvAlgorithm
