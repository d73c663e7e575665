// Small networks for 28x28 inputs (MNIST, Fashion-MNIST): fast enough to train on a laptop.
#pragma once

#include "models/registry.h"

namespace rt {

// LeNet-5 (LeCun et al. 1998) with ReLU and max pooling: conv 6 5x5 pad 2, pool, conv 16 5x5,
// pool, fc 120, fc 84, fc classes.
std::unique_ptr<Graph> build_lenet(const ModelOptions& options);
// Two 3x3 conv blocks (32, 64 channels) with batch norm, then fc 128 with dropout.
std::unique_ptr<Graph> build_simple_cnn(const ModelOptions& options);
// A ResNet for small images: 3x3 stem (16), three stages of basic blocks (16, 32, 64 channels,
// strides 1, 2, 2), global average pooling, fc. torchvision's block structure and names.
std::unique_ptr<Graph> build_resnet_mini(const ModelOptions& options);

}  // namespace rt
