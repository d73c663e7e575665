// A small ResNet in torchvision's block structure and naming (conv1, bn1, layerN.M.conv1/bn1/
// conv2/bn2, layerN.0.downsample.0/1, fc), sized for 28x28 inputs.
#include "base/check.h"
#include "models/teaching.h"
#include "nn/layers/add.h"
#include "nn/layers/batch_norm2d.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/pool2d.h"
#include "nn/layers/relu.h"

namespace rt {
namespace {

Conv2d conv(int64_t c, int64_t k, int64_t r, int64_t stride) {
  Conv2dGeometry g;
  g.in_channels = c;
  g.out_channels = k;
  g.kernel_h = g.kernel_w = r;
  g.stride_h = g.stride_w = stride;
  g.pad_h = g.pad_w = r / 2;
  Conv2d layer(g);
  layer.kaiming_fan_out();
  return layer;
}

// torchvision BasicBlock: conv3x3-bn-relu-conv3x3-bn, plus identity or 1x1 downsample, relu.
int basic_block(Graph& g, const std::string& name, int x, int64_t in, int64_t out, int64_t stride) {
  int y = g.add(name + ".conv1", conv(in, out, 3, stride), {x});
  y = g.add(name + ".bn1", BatchNorm2d(out), {y});
  y = g.add(name + ".relu1", Relu(), {y});
  y = g.add(name + ".conv2", conv(out, out, 3, 1), {y});
  y = g.add(name + ".bn2", BatchNorm2d(out), {y});
  int shortcut = x;
  if (stride != 1 || in != out) {
    shortcut = g.add(name + ".downsample.0", conv(in, out, 1, stride), {x});
    shortcut = g.add(name + ".downsample.1", BatchNorm2d(out), {shortcut});
  }
  y = g.add(name + ".add", Add(), {y, shortcut});
  return g.add(name + ".relu2", Relu(), {y});
}

}  // namespace

std::unique_ptr<Graph> build_resnet_mini(const ModelOptions& o) {
  RT_CHECK(o.input_shape.size() == 3, "resnet_mini expects (C, H, W) inputs");
  auto g = std::make_unique<Graph>(o.input_shape);
  int x = g->add("conv1", conv(o.input_shape[0], 16, 3, 1), {g->input()});
  x = g->add("bn1", BatchNorm2d(16), {x});
  x = g->add("relu", Relu(), {x});
  const int64_t widths[] = {16, 32, 64};
  int64_t in = 16;
  for (int stage = 0; stage < 3; ++stage) {
    x = basic_block(*g, str_cat("layer", stage + 1, ".0"), x, in, widths[stage], stage == 0 ? 1 : 2);
    in = widths[stage];
  }
  x = g->add("avgpool", AdaptiveAvgPool2d(1, 1), {x});
  x = g->add("flatten", Flatten(), {x});
  g->add("fc", Linear(64, o.num_classes), {x});
  return g;
}

}  // namespace rt
