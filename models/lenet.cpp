// LeNet-5 and a small conv-BN network; torchvision-style names (features.N / classifier.N).
#include "base/check.h"
#include "models/teaching.h"
#include "nn/layers/batch_norm2d.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/dropout.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/pool2d.h"
#include "nn/layers/relu.h"

namespace rt {
namespace {

Conv2dGeometry conv(int64_t c, int64_t k, int64_t r, int64_t pad) {
  Conv2dGeometry g = Conv2dGeometry::square(c, k, r, 1, pad);
  g.bias = true;
  return g;
}

Pool2dGeometry max_pool2() {
  Pool2dGeometry g;
  g.kind = PoolKind::kMax;
  g.kernel_h = g.kernel_w = g.stride_h = g.stride_w = 2;
  return g;
}

}  // namespace

std::unique_ptr<Graph> build_lenet(const ModelOptions& o) {
  RT_CHECK(o.input_shape.size() == 3, "lenet expects (C, H, W) inputs");
  auto g = std::make_unique<Graph>(o.input_shape);
  const int64_t h = ((o.input_shape[1] / 2) - 4) / 2, w = ((o.input_shape[2] / 2) - 4) / 2;
  RT_CHECK(h >= 1 && w >= 1, "lenet needs inputs of at least 12x12, got ", shape_str(o.input_shape));
  int x = g->add("features.0", Conv2d(conv(o.input_shape[0], 6, 5, 2)), {g->input()});
  x = g->add("features.1", Relu(), {x});
  x = g->add("features.2", Pool2d(max_pool2()), {x});
  x = g->add("features.3", Conv2d(conv(6, 16, 5, 0)), {x});
  x = g->add("features.4", Relu(), {x});
  x = g->add("features.5", Pool2d(max_pool2()), {x});
  x = g->add("flatten", Flatten(), {x});
  x = g->add("classifier.0", Linear(16 * h * w, 120), {x});
  x = g->add("classifier.1", Relu(), {x});
  x = g->add("classifier.2", Linear(120, 84), {x});
  x = g->add("classifier.3", Relu(), {x});
  g->add("classifier.4", Linear(84, o.num_classes), {x});
  return g;
}

std::unique_ptr<Graph> build_simple_cnn(const ModelOptions& o) {
  RT_CHECK(o.input_shape.size() == 3, "simple_cnn expects (C, H, W) inputs");
  auto g = std::make_unique<Graph>(o.input_shape);
  const int64_t h = o.input_shape[1] / 4, w = o.input_shape[2] / 4;
  RT_CHECK(h >= 1 && w >= 1, "simple_cnn needs inputs of at least 4x4, got ", shape_str(o.input_shape));
  Conv2dGeometry c1 = conv(o.input_shape[0], 32, 3, 1), c2 = conv(32, 64, 3, 1);
  c1.bias = c2.bias = false;
  int x = g->add("features.0", Conv2d(c1), {g->input()});
  x = g->add("features.1", BatchNorm2d(32), {x});
  x = g->add("features.2", Relu(), {x});
  x = g->add("features.3", Pool2d(max_pool2()), {x});
  x = g->add("features.4", Conv2d(c2), {x});
  x = g->add("features.5", BatchNorm2d(64), {x});
  x = g->add("features.6", Relu(), {x});
  x = g->add("features.7", Pool2d(max_pool2()), {x});
  x = g->add("flatten", Flatten(), {x});
  x = g->add("classifier.0", Linear(64 * h * w, 128), {x});
  x = g->add("classifier.1", Relu(), {x});
  x = g->add("classifier.2", Dropout(o.dropout), {x});
  g->add("classifier.3", Linear(128, o.num_classes), {x});
  return g;
}

}  // namespace rt
