#include "nn/ops/conv2d.h"

#include "base/check.h"

namespace rt {

static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

Conv2dGeometry Conv2dGeometry::square(int64_t c, int64_t k, int64_t r, int64_t stride, int64_t pad) {
  Conv2dGeometry g;
  g.in_channels = c;
  g.out_channels = k;
  g.kernel_h = g.kernel_w = r;
  g.stride_h = g.stride_w = stride;
  g.pad_h = g.pad_w = pad;
  return g;
}

Shape Conv2dGeometry::output_shape(const Shape& x) const {
  return {x[0], out_channels, conv_out(x[2], kernel_h, stride_h, pad_h, dilation_h),
          conv_out(x[3], kernel_w, stride_w, pad_w, dilation_w)};
}

void Conv2dGeometry::validate(const Shape& x) const {
  RT_CHECK(x.size() == 4, "conv2d expects an (N, C, H, W) input, got ", shape_str(x));
  RT_CHECK(x[1] == in_channels, "conv2d expects ", in_channels, " input channels, got ", shape_str(x));
  RT_CHECK(groups >= 1 && in_channels % groups == 0 && out_channels % groups == 0, "conv2d groups=", groups,
           " must divide in_channels=", in_channels, " and out_channels=", out_channels);
  RT_CHECK(kernel_h >= 1 && kernel_w >= 1 && stride_h >= 1 && stride_w >= 1 && dilation_h >= 1 && dilation_w >= 1 &&
               pad_h >= 0 && pad_w >= 0,
           "conv2d kernel, stride and dilation must be >= 1 and padding >= 0");
  const Shape y = output_shape(x);
  RT_CHECK(y[2] >= 1 && y[3] >= 1, "conv2d ", kernel_h, "x", kernel_w, " kernel does not fit input ", shape_str(x),
           " with padding ", pad_h, "x", pad_w);
}

}  // namespace rt
