// The pieces every ResNet here is made of, shared by the torchvision ResNets (resnet.cpp) and the
// small teaching ResNet (resnet_small.cpp), so both build their blocks the same way.
#pragma once

#include <string>

#include "nn/graph.h"
#include "nn/layers/conv2d.h"

namespace rt {

// A bias-free r x r convolution with padding r/2, Kaiming-normal fan-out as torchvision's ResNet.
Conv2d resnet_conv(int64_t c, int64_t k, int64_t r, int64_t stride);

// BasicBlock (expansion 1) or Bottleneck (expansion 4, stride on the 3x3), then the shortcut:
// identity, or a strided 1x1 conv + bn when the shape changes; node names as torchvision's
// (name.conv1, name.bn1, ..., name.downsample.0/1). Returns the block's output node.
int resnet_block(Graph& g, const std::string& name, int x, int64_t in, int64_t planes, int64_t stride, bool bottleneck);

}  // namespace rt
