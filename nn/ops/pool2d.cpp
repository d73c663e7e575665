#include "nn/ops/pool2d.h"

#include "base/check.h"

namespace rt {

Shape Pool2dGeometry::output_shape(const Shape& x) const {
  return {x[0], x[1], (x[2] + 2 * pad_h - kernel_h) / stride_h + 1, (x[3] + 2 * pad_w - kernel_w) / stride_w + 1};
}

void Pool2dGeometry::validate(const Shape& x) const {
  RT_CHECK(x.size() == 4, "pool2d expects (N, C, H, W), got ", shape_str(x));
  RT_CHECK(kernel_h >= 1 && kernel_w >= 1 && stride_h >= 1 && stride_w >= 1, "pool2d kernel and stride must be >= 1");
  RT_CHECK(pad_h >= 0 && pad_w >= 0 && 2 * pad_h <= kernel_h && 2 * pad_w <= kernel_w,
           "pool2d padding must be in [0, kernel/2], got ", pad_h, "x", pad_w, " for a ", kernel_h, "x", kernel_w,
           " kernel");
  RT_CHECK(x[2] + 2 * pad_h >= kernel_h && x[3] + 2 * pad_w >= kernel_w, "pool2d ", kernel_h, "x", kernel_w,
           " window does not fit input ", shape_str(x));
}

bool adaptive_is_uniform(const Shape& x, int64_t out_h, int64_t out_w) {
  return x[2] % out_h == 0 && x[3] % out_w == 0;
}

}  // namespace rt
