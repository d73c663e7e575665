// Inception-v3 as torchvision 0.14's Inception3 with transform_input=False: BasicConv2d units
// (conv without bias, batch norm eps 0.001, ReLU) named "<module>.<unit>.conv/.bn", modules
// Mixed_5b ... Mixed_7c of types A to E, adaptive 1x1 average pooling, dropout, fc; optionally the
// auxiliary classifier AuxLogits on Mixed_6e, a second graph output whose loss weighs 0.4 (the
// weight of torchvision's reference training recipe).
#include <initializer_list>

#include "base/check.h"
#include "models/paper_models.h"
#include "nn/layers/batch_norm2d.h"
#include "nn/layers/concat.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/dropout.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/pool2d.h"
#include "nn/layers/relu.h"

namespace rt {
namespace {

// torchvision draws every conv and fc weight from trunc_normal_(std=0.1, a=-2, b=2); the bounds
// are absolute, i.e. 20 standard deviations, so a plain normal(0, 0.1) is the same distribution
// up to draws beyond 20 sigma.
constexpr double kInitStd = 0.1;

struct Kernel {
  int64_t r, s, stride, pad_h, pad_w;
};
constexpr Kernel k1x1{1, 1, 1, 0, 0}, k3x3{3, 3, 1, 1, 1}, k3x3_valid{3, 3, 1, 0, 0}, k3x3_s2{3, 3, 2, 0, 0},
    k5x5{5, 5, 1, 2, 2}, k1x3{1, 3, 1, 0, 1}, k3x1{3, 1, 1, 1, 0}, k1x7{1, 7, 1, 0, 3}, k7x1{7, 1, 1, 3, 0};

// torchvision's BasicConv2d: conv (no bias), batch norm (eps 0.001), ReLU.
int basic_conv(Graph& g, const std::string& name, int x, int64_t c, int64_t k, Kernel kernel) {
  Conv2dGeometry geometry = Conv2dGeometry::square(c, k, kernel.r, kernel.stride, kernel.pad_h);
  geometry.kernel_w = kernel.s;
  geometry.pad_w = kernel.pad_w;
  Conv2d conv(geometry);
  conv.normal_init(kInitStd);
  x = g.add(name + ".conv", std::move(conv), {x});
  x = g.add(name + ".bn", BatchNorm2d(k, BatchNormOptions{0.001, 0.1}), {x});
  return g.add(name + ".relu", Relu(), {x});
}

struct Unit {
  const char* name;
  int64_t out;
  Kernel kernel;
};

// A chain of BasicConv2d units of module m reading x (c channels); returns the last unit's node.
int chain(Graph& g, const std::string& m, int x, int64_t c, std::initializer_list<Unit> units) {
  for (const Unit& u : units) {
    x = basic_conv(g, str_cat(m, ".", u.name), x, c, u.out, u.kernel);
    c = u.out;
  }
  return x;
}

// F.avg_pool2d(x, 3, stride=1, padding=1), counting the padding as torch does by default.
int avg_pool(Graph& g, const std::string& m, int x) {
  Pool2dGeometry p;
  p.kind = PoolKind::kAvg;
  p.kernel_h = p.kernel_w = 3;
  p.pad_h = p.pad_w = 1;
  return g.add(m + ".avg_pool", Pool2d(p), {x});
}

// nn.MaxPool2d(3, stride=2) / F.max_pool2d(x, 3, stride=2).
int max_pool(Graph& g, const std::string& name, int x) {
  Pool2dGeometry p;
  p.kernel_h = p.kernel_w = 3;
  p.stride_h = p.stride_w = 2;
  return g.add(name, Pool2d(p), {x});
}

// 35x35 grid; 224 + pool_features channels out.
int inception_a(Graph& g, const std::string& m, int x, int64_t in, int64_t pool_features) {
  const int b1 = chain(g, m, x, in, {{"branch1x1", 64, k1x1}});
  const int b5 = chain(g, m, x, in, {{"branch5x5_1", 48, k1x1}, {"branch5x5_2", 64, k5x5}});
  const int b3 =
      chain(g, m, x, in, {{"branch3x3dbl_1", 64, k1x1}, {"branch3x3dbl_2", 96, k3x3}, {"branch3x3dbl_3", 96, k3x3}});
  const int bp = chain(g, m, avg_pool(g, m, x), in, {{"branch_pool", pool_features, k1x1}});
  return g.add(m + ".cat", Concat(), {b1, b5, b3, bp});
}

// 35x35 -> 17x17; 480 + in channels out.
int inception_b(Graph& g, const std::string& m, int x, int64_t in) {
  const int b3 = chain(g, m, x, in, {{"branch3x3", 384, k3x3_s2}});
  const int bd =
      chain(g, m, x, in, {{"branch3x3dbl_1", 64, k1x1}, {"branch3x3dbl_2", 96, k3x3}, {"branch3x3dbl_3", 96, k3x3_s2}});
  const int bp = max_pool(g, m + ".max_pool", x);
  return g.add(m + ".cat", Concat(), {b3, bd, bp});
}

// 17x17 with factorised 7x7 convolutions of c7 channels; 768 channels out.
int inception_c(Graph& g, const std::string& m, int x, int64_t in, int64_t c7) {
  const int b1 = chain(g, m, x, in, {{"branch1x1", 192, k1x1}});
  const int b7 = chain(g, m, x, in, {{"branch7x7_1", c7, k1x1}, {"branch7x7_2", c7, k1x7}, {"branch7x7_3", 192, k7x1}});
  const int bd = chain(g, m, x, in,
                       {{"branch7x7dbl_1", c7, k1x1},
                        {"branch7x7dbl_2", c7, k7x1},
                        {"branch7x7dbl_3", c7, k1x7},
                        {"branch7x7dbl_4", c7, k7x1},
                        {"branch7x7dbl_5", 192, k1x7}});
  const int bp = chain(g, m, avg_pool(g, m, x), in, {{"branch_pool", 192, k1x1}});
  return g.add(m + ".cat", Concat(), {b1, b7, bd, bp});
}

// 17x17 -> 8x8; 512 + in channels out.
int inception_d(Graph& g, const std::string& m, int x, int64_t in) {
  const int b3 = chain(g, m, x, in, {{"branch3x3_1", 192, k1x1}, {"branch3x3_2", 320, k3x3_s2}});
  const int b7 = chain(g, m, x, in,
                       {{"branch7x7x3_1", 192, k1x1},
                        {"branch7x7x3_2", 192, k1x7},
                        {"branch7x7x3_3", 192, k7x1},
                        {"branch7x7x3_4", 192, k3x3_s2}});
  const int bp = max_pool(g, m + ".max_pool", x);
  return g.add(m + ".cat", Concat(), {b3, b7, bp});
}

// 8x8 with expanded 1x3 / 3x1 branches; 2048 channels out. torchvision concatenates the 1x3/3x1
// pairs first and then the branches; one concatenation of all six gives the same channel order.
int inception_e(Graph& g, const std::string& m, int x, int64_t in) {
  const int b1 = chain(g, m, x, in, {{"branch1x1", 320, k1x1}});
  const int b3 = chain(g, m, x, in, {{"branch3x3_1", 384, k1x1}});
  const int b3a = chain(g, m, b3, 384, {{"branch3x3_2a", 384, k1x3}});
  const int b3b = chain(g, m, b3, 384, {{"branch3x3_2b", 384, k3x1}});
  const int bd = chain(g, m, x, in, {{"branch3x3dbl_1", 448, k1x1}, {"branch3x3dbl_2", 384, k3x3}});
  const int bda = chain(g, m, bd, 384, {{"branch3x3dbl_3a", 384, k1x3}});
  const int bdb = chain(g, m, bd, 384, {{"branch3x3dbl_3b", 384, k3x1}});
  const int bp = chain(g, m, avg_pool(g, m, x), in, {{"branch_pool", 192, k1x1}});
  return g.add(m + ".cat", Concat(), {b1, b3a, b3b, bda, bdb, bp});
}

// torchvision's InceptionAux: avg_pool2d(5, stride 3), BasicConv2d 1x1 to 128, BasicConv2d 5x5 to
// 768, adaptive average pooling to 1x1, fc. Its fc is drawn with std 0.001; conv1's stddev = 0.01
// in torchvision sits on the BasicConv2d, which its init loop never reads, so conv1 gets 0.1.
int inception_aux(Graph& g, int x, int64_t classes) {
  Pool2dGeometry p;
  p.kind = PoolKind::kAvg;
  p.kernel_h = p.kernel_w = 5;
  p.stride_h = p.stride_w = 3;
  x = g.add("AuxLogits.avg_pool", Pool2d(p), {x});
  x = basic_conv(g, "AuxLogits.conv0", x, 768, 128, k1x1);
  x = basic_conv(g, "AuxLogits.conv1", x, 128, 768, {5, 5, 1, 0, 0});
  x = g.add("AuxLogits.avgpool", AdaptiveAvgPool2d(1, 1), {x});
  x = g.add("AuxLogits.flatten", Flatten(), {x});
  Linear fc(768, classes);
  fc.normal_init(0.001);
  return g.add("AuxLogits.fc", std::move(fc), {x});
}

// Side of the 17x17 grid (Mixed_6e) for an input side, following the stem's valid convolutions
// and poolings; the aux head's 5x5 pooling and 5x5 convolution need at least 17.
int64_t grid17_side(int64_t in) {
  const auto valid = [](int64_t x, int64_t k, int64_t s) { return (x - k) / s + 1; };
  int64_t x = valid(in, 3, 2);  // Conv2d_1a_3x3
  x = valid(x, 3, 1);           // Conv2d_2a_3x3
  x = valid(x, 3, 2);           // maxpool1
  x = valid(x, 3, 1);           // Conv2d_4a_3x3
  x = valid(x, 3, 2);           // maxpool2
  return valid(x, 3, 2);        // Mixed_6a
}

}  // namespace

std::unique_ptr<Graph> build_inception_v3(const ModelOptions& o) {
  RT_CHECK(o.input_shape.size() == 3, "inception_v3 expects (C, H, W) inputs, got ", shape_str(o.input_shape));
  RT_CHECK(o.input_shape[1] >= 75 && o.input_shape[2] >= 75, "inception_v3 needs inputs of at least 75x75, got ",
           shape_str(o.input_shape));
  RT_CHECK(!o.aux_logits || (grid17_side(o.input_shape[1]) >= 17 && grid17_side(o.input_shape[2]) >= 17),
           "inception_v3 with its aux head (model.aux_logits = true) needs inputs of at least 299x299, got ",
           shape_str(o.input_shape), "; set model.aux_logits = false for smaller inputs");
  auto g = std::make_unique<Graph>(o.input_shape);
  int x = basic_conv(*g, "Conv2d_1a_3x3", g->input(), o.input_shape[0], 32, k3x3_s2);
  x = basic_conv(*g, "Conv2d_2a_3x3", x, 32, 32, k3x3_valid);
  x = basic_conv(*g, "Conv2d_2b_3x3", x, 32, 64, k3x3);
  x = max_pool(*g, "maxpool1", x);
  x = basic_conv(*g, "Conv2d_3b_1x1", x, 64, 80, k1x1);
  x = basic_conv(*g, "Conv2d_4a_3x3", x, 80, 192, k3x3_valid);
  x = max_pool(*g, "maxpool2", x);
  x = inception_a(*g, "Mixed_5b", x, 192, 32);
  x = inception_a(*g, "Mixed_5c", x, 256, 64);
  x = inception_a(*g, "Mixed_5d", x, 288, 64);
  x = inception_b(*g, "Mixed_6a", x, 288);
  x = inception_c(*g, "Mixed_6b", x, 768, 128);
  x = inception_c(*g, "Mixed_6c", x, 768, 160);
  x = inception_c(*g, "Mixed_6d", x, 768, 160);
  x = inception_c(*g, "Mixed_6e", x, 768, 192);
  const int aux = o.aux_logits ? inception_aux(*g, x, o.num_classes) : -1;
  x = inception_d(*g, "Mixed_7a", x, 768);
  x = inception_e(*g, "Mixed_7b", x, 1280);
  x = inception_e(*g, "Mixed_7c", x, 2048);
  x = g->add("avgpool", AdaptiveAvgPool2d(1, 1), {x});
  // Dropout after the flatten rather than before (elementwise either way): it runs on plain data.
  x = g->add("flatten", Flatten(), {x});
  x = g->add("dropout", Dropout(o.dropout), {x});
  // normal(0, 0.1) weight as torchvision; its bias keeps nn.Linear's uniform default there, zero here.
  Linear fc(2048, o.num_classes);
  fc.normal_init(kInitStd);
  g->add("fc", std::move(fc), {x});
  if (aux >= 0) g->add_output(aux, 0.4);
  return g;
}

}  // namespace rt
