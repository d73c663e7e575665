// VGG-11/13/16/19 (configurations A, B, D, E), with and without batch norm, as torchvision 0.14
// builds them: features.N numbered as torchvision's nn.Sequential, avgpool adaptive to 7x7,
// classifier.{0,3,6} with ReLU and Dropout at 1, 2, 4, 5. Convolutions Kaiming-normal fan-out
// with zero bias, batch norms (1, 0), linears normal(0, 0.01) with zero bias.
#include <vector>

#include "base/check.h"
#include "models/paper_models.h"
#include "nn/layers/batch_norm2d.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/dropout.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/pool2d.h"
#include "nn/layers/relu.h"

namespace rt {
namespace {

constexpr int kPool = 0;  // "M" in torchvision's cfgs: 2x2 max pooling

// torchvision's cfgs "A", "B", "D", "E".
const std::vector<int> kVgg11{64, kPool, 128, kPool, 256, 256, kPool, 512, 512, kPool, 512, 512, kPool};
const std::vector<int> kVgg13{64, 64, kPool, 128, 128, kPool, 256, 256, kPool, 512, 512, kPool, 512, 512, kPool};
const std::vector<int> kVgg16{64,    64,  kPool, 128, 128,   kPool, 256, 256, 256,
                              kPool, 512, 512,   512, kPool, 512,   512, 512, kPool};
const std::vector<int> kVgg19{64,  64,  kPool, 128, 128,   kPool, 256, 256, 256, 256,  kPool,
                              512, 512, 512,   512, kPool, 512,   512, 512, 512, kPool};

std::unique_ptr<Graph> build_vgg(const ModelOptions& o, const std::vector<int>& cfg, bool batch_norm) {
  RT_CHECK(o.input_shape.size() == 3, "vgg expects (C, H, W) inputs, got ", shape_str(o.input_shape));
  RT_CHECK(o.input_shape[1] >= 32 && o.input_shape[2] >= 32,
           "vgg needs inputs of at least 32x32 (five 2x2 poolings), got ", shape_str(o.input_shape));
  auto g = std::make_unique<Graph>(o.input_shape);
  int x = g->input(), index = 0;
  int64_t channels = o.input_shape[0];
  auto feature = [&](auto layer) { x = g->add(str_cat("features.", index++), std::move(layer), {x}); };
  for (int v : cfg) {
    if (v == kPool) {
      Pool2dGeometry pool;
      pool.kernel_h = pool.kernel_w = pool.stride_h = pool.stride_w = 2;
      feature(Pool2d(pool));
      continue;
    }
    Conv2dGeometry c = Conv2dGeometry::square(channels, v, 3, 1, 1);
    c.bias = true;
    Conv2d conv(c);
    conv.kaiming_fan_out();
    feature(std::move(conv));
    if (batch_norm) feature(BatchNorm2d(v));
    feature(Relu());
    channels = v;
  }
  x = g->add("avgpool", AdaptiveAvgPool2d(7, 7), {x});
  x = g->add("flatten", Flatten(), {x});
  const int64_t widths[] = {channels * 7 * 7, 4096, 4096, o.num_classes};
  for (int i = 0; i < 3; ++i) {
    Linear fc(widths[i], widths[i + 1]);
    fc.normal_init(0.01);
    x = g->add(str_cat("classifier.", 3 * i), std::move(fc), {x});
    if (i == 2) break;
    x = g->add(str_cat("classifier.", 3 * i + 1), Relu(), {x});
    x = g->add(str_cat("classifier.", 3 * i + 2), Dropout(o.dropout), {x});
  }
  return g;
}

}  // namespace

std::unique_ptr<Graph> build_vgg11(const ModelOptions& o) { return build_vgg(o, kVgg11, false); }
std::unique_ptr<Graph> build_vgg11_bn(const ModelOptions& o) { return build_vgg(o, kVgg11, true); }
std::unique_ptr<Graph> build_vgg13(const ModelOptions& o) { return build_vgg(o, kVgg13, false); }
std::unique_ptr<Graph> build_vgg13_bn(const ModelOptions& o) { return build_vgg(o, kVgg13, true); }
std::unique_ptr<Graph> build_vgg16(const ModelOptions& o) { return build_vgg(o, kVgg16, false); }
std::unique_ptr<Graph> build_vgg16_bn(const ModelOptions& o) { return build_vgg(o, kVgg16, true); }
std::unique_ptr<Graph> build_vgg19(const ModelOptions& o) { return build_vgg(o, kVgg19, false); }
std::unique_ptr<Graph> build_vgg19_bn(const ModelOptions& o) { return build_vgg(o, kVgg19, true); }

}  // namespace rt
