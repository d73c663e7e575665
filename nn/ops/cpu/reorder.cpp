// Layout conversion between tensors of one shape, through a oneDNN reorder.
#include "nn/ops/reorder.h"

#include "nn/ops/cpu/dnnl_util.h"
#include "nn/ops/cpu/make.h"

namespace rt::cpu {

void reorder(const Tensor& src, Tensor& dst) { reorder(mem(src), mem(dst)); }

}  // namespace rt::cpu
