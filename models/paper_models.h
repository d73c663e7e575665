// The paper's ImageNet architectures, layer for layer as torchvision 0.14 defines them, with
// torchvision's state_dict keys and initialisation, so weights load from and save to torchvision.
// Inputs are (3, H, W); num_classes and dropout come from ModelOptions.
#pragma once

#include "models/registry.h"

namespace rt {

// ResNet v1.5 (the stride sits on the bottleneck's 3x3 convolution): basic blocks for 18 and 34
// layers, bottlenecks for 50, 101 and 152.
std::unique_ptr<Graph> build_resnet18(const ModelOptions& options);
std::unique_ptr<Graph> build_resnet34(const ModelOptions& options);
std::unique_ptr<Graph> build_resnet50(const ModelOptions& options);
std::unique_ptr<Graph> build_resnet101(const ModelOptions& options);
std::unique_ptr<Graph> build_resnet152(const ModelOptions& options);

// VGG configurations A, B, D, E with and without batch norm; adaptive 7x7 average pooling before
// the classifier, so any input from 32x32 up works.
std::unique_ptr<Graph> build_vgg11(const ModelOptions& options);
std::unique_ptr<Graph> build_vgg11_bn(const ModelOptions& options);
std::unique_ptr<Graph> build_vgg13(const ModelOptions& options);
std::unique_ptr<Graph> build_vgg13_bn(const ModelOptions& options);
std::unique_ptr<Graph> build_vgg16(const ModelOptions& options);
std::unique_ptr<Graph> build_vgg16_bn(const ModelOptions& options);
std::unique_ptr<Graph> build_vgg19(const ModelOptions& options);
std::unique_ptr<Graph> build_vgg19_bn(const ModelOptions& options);

// Inception-v3 without transform_input; inputs of at least 75x75 (299x299 as published), and of
// at least 299x299 with the auxiliary head (options.aux_logits), which is a second graph output.
std::unique_ptr<Graph> build_inception_v3(const ModelOptions& options);

}  // namespace rt
