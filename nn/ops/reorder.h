// Layout conversion between two specs of the same shape and device (blocked <-> plain, or between
// two blocked layouts). Exact: it moves values, never computes with them.
#pragma once

#include "nn/tensor.h"

namespace rt {

void reorder(const Tensor& src, Tensor& dst);  // writes dst

// A plain copy of any tensor (for checkpoints, interop and tests).
Tensor to_plain(const Tensor& t);

}  // namespace rt
