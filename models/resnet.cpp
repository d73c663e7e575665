// ResNet-18/34/50/101/152 as torchvision 0.14 builds them (v1.5): names conv1, bn1,
// layerN.M.{conv1,bn1,conv2,bn2,conv3,bn3,downsample.0,downsample.1}, fc. Convolutions are
// Kaiming-normal fan-out, batch norms (1, 0), fc PyTorch's default nn.Linear initialisation.
#include "base/check.h"
#include "models/paper_models.h"
#include "models/resnet_blocks.h"
#include "nn/layers/add.h"
#include "nn/layers/batch_norm2d.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/pool2d.h"
#include "nn/layers/relu.h"

namespace rt {

Conv2d resnet_conv(int64_t c, int64_t k, int64_t r, int64_t stride) {
  Conv2d layer(Conv2dGeometry::square(c, k, r, stride, r / 2));
  layer.kaiming_fan_out();
  return layer;
}

namespace {

// conv, bn and (unless it ends a residual branch) relu, under torchvision's numbering "conv<i>",
// "bn<i>"; the relu node is named "relu<i>" (torchvision reuses one parameterless "relu").
int conv_bn(Graph& g, const std::string& block, int i, int x, int64_t c, int64_t k, int64_t r, int64_t stride,
            bool relu) {
  x = g.add(str_cat(block, ".conv", i), resnet_conv(c, k, r, stride), {x});
  x = g.add(str_cat(block, ".bn", i), BatchNorm2d(k), {x});
  return relu ? g.add(str_cat(block, ".relu", i), Relu(), {x}) : x;
}

}  // namespace

int resnet_block(Graph& g, const std::string& name, int x, int64_t in, int64_t planes, int64_t stride,
                 bool bottleneck) {
  const int64_t out = bottleneck ? planes * 4 : planes;
  int y = x;
  if (bottleneck) {
    y = conv_bn(g, name, 1, y, in, planes, 1, 1, true);
    y = conv_bn(g, name, 2, y, planes, planes, 3, stride, true);
    y = conv_bn(g, name, 3, y, planes, out, 1, 1, false);
  } else {
    y = conv_bn(g, name, 1, y, in, planes, 3, stride, true);
    y = conv_bn(g, name, 2, y, planes, planes, 3, 1, false);
  }
  int shortcut = x;
  if (stride != 1 || in != out) {
    shortcut = g.add(name + ".downsample.0", resnet_conv(in, out, 1, stride), {x});
    shortcut = g.add(name + ".downsample.1", BatchNorm2d(out), {shortcut});
  }
  y = g.add(name + ".add", Add(), {y, shortcut});
  return g.add(name + ".relu", Relu(), {y});
}

namespace {

std::unique_ptr<Graph> build_resnet(const ModelOptions& o, const int (&blocks)[4], bool bottleneck) {
  RT_CHECK(o.input_shape.size() == 3, "resnet expects (C, H, W) inputs, got ", shape_str(o.input_shape));
  auto g = std::make_unique<Graph>(o.input_shape);
  int x = g->add("conv1", resnet_conv(o.input_shape[0], 64, 7, 2), {g->input()});
  x = g->add("bn1", BatchNorm2d(64), {x});
  x = g->add("relu", Relu(), {x});
  Pool2dGeometry pool;
  pool.kernel_h = pool.kernel_w = 3;
  pool.stride_h = pool.stride_w = 2;
  pool.pad_h = pool.pad_w = 1;
  x = g->add("maxpool", Pool2d(pool), {x});
  int64_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t planes = int64_t{64} << stage;
    for (int i = 0; i < blocks[stage]; ++i) {
      x = resnet_block(*g, str_cat("layer", stage + 1, ".", i), x, in, planes, i == 0 && stage > 0 ? 2 : 1, bottleneck);
      in = bottleneck ? planes * 4 : planes;
    }
  }
  x = g->add("avgpool", AdaptiveAvgPool2d(1, 1), {x});
  x = g->add("flatten", Flatten(), {x});
  g->add("fc", Linear(in, o.num_classes), {x});
  return g;
}

}  // namespace

std::unique_ptr<Graph> build_resnet18(const ModelOptions& o) { return build_resnet(o, {2, 2, 2, 2}, false); }
std::unique_ptr<Graph> build_resnet34(const ModelOptions& o) { return build_resnet(o, {3, 4, 6, 3}, false); }
std::unique_ptr<Graph> build_resnet50(const ModelOptions& o) { return build_resnet(o, {3, 4, 6, 3}, true); }
std::unique_ptr<Graph> build_resnet101(const ModelOptions& o) { return build_resnet(o, {3, 4, 23, 3}, true); }
std::unique_ptr<Graph> build_resnet152(const ModelOptions& o) { return build_resnet(o, {3, 8, 36, 3}, true); }

}  // namespace rt
