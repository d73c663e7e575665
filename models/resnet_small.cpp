// A small ResNet in torchvision's block structure and naming (conv1, bn1, layerN.M.conv1/bn1/
// conv2/bn2, layerN.0.downsample.0/1, fc), sized for 28x28 inputs.
#include "base/check.h"
#include "models/resnet_blocks.h"
#include "models/teaching.h"
#include "nn/layers/batch_norm2d.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/pool2d.h"
#include "nn/layers/relu.h"

namespace rt {

std::unique_ptr<Graph> build_resnet_mini(const ModelOptions& o) {
  RT_CHECK(o.input_shape.size() == 3, "resnet_mini expects (C, H, W) inputs");
  auto g = std::make_unique<Graph>(o.input_shape);
  int x = g->add("conv1", resnet_conv(o.input_shape[0], 16, 3, 1), {g->input()});
  x = g->add("bn1", BatchNorm2d(16), {x});
  x = g->add("relu", Relu(), {x});
  const int64_t widths[] = {16, 32, 64};
  int64_t in = 16;
  for (int stage = 0; stage < 3; ++stage) {
    x = resnet_block(*g, str_cat("layer", stage + 1, ".0"), x, in, widths[stage], stage == 0 ? 1 : 2, false);
    in = widths[stage];
  }
  x = g->add("avgpool", AdaptiveAvgPool2d(1, 1), {x});
  x = g->add("flatten", Flatten(), {x});
  g->add("fc", Linear(64, o.num_classes), {x});
  return g;
}

}  // namespace rt
