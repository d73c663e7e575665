// Our bf16 Winograd (Note [bf16 Winograd] in nn/ops/cpu/winograd_bf16.h) against oneDNN's direct
// bf16 convolution, layer by layer: the 3x3 stride-1 shapes of ResNet-101, VGG-16 and
// Inception-v3 at batch 8, each pass (forward, backward data, backward weights) timed alone. The
// input arrives in the layout a direct bf16 convolution before it hands over. Between calls a
// 64 MiB buffer is written, so each call starts with the caches holding someone else's data, as
// in a step (RT_WARM=1 leaves them warm). Prints milliseconds, medians of RUNS (default 7).
// usage: winograd_bf16_layers [RUNS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "nn/cpu_bf16.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/cpu/winograd_bf16.h"
#include "nn/ops/reorder.h"

namespace {

using rt::Tensor;

struct Layer {
  const char* name;
  int64_t c, k, h;
};

std::vector<char> evictor(64 << 20);

template <class F>
double median_ms(int runs, F&& f) {
  const bool warm = std::getenv("RT_WARM") != nullptr;
  std::vector<double> ms;
  f();  // first call: oneDNN's lazy set-up
  for (int i = 0; i < runs; ++i) {
    if (!warm)
      for (size_t j = 0; j < evictor.size(); j += 64) evictor[j] = static_cast<char>(evictor[j] + 1);
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

Tensor filled(const rt::TensorSpec& spec, float scale) {
  Tensor plain(rt::plain_spec(spec.shape));
  for (int64_t i = 0; i < plain.numel(); ++i)
    plain.data()[i] = scale * static_cast<float>((i * 7919 % 201) - 100) / 100;
  if (spec.layout == nullptr) return plain;
  Tensor t(spec);
  rt::reorder(plain, t);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 7;
  if (!rt::cpu_bf16().runs) {
    std::printf("oneDNN has no bf16 kernels on %s\n", rt::cpu_bf16().isa.c_str());
    return 1;
  }
  const Layer layers[] = {
      {"resnet layer1", 64, 64, 56},     {"resnet layer2", 128, 128, 28}, {"resnet layer3", 256, 256, 14},
      {"resnet layer4", 512, 512, 7},    {"vgg 64->128", 64, 128, 112},   {"vgg block2", 128, 128, 112},
      {"vgg 128->256", 128, 256, 56},    {"vgg block3", 256, 256, 56},    {"vgg block4", 512, 512, 28},
      {"vgg block5", 512, 512, 14},      {"inception 7b", 448, 384, 8},   {"inception 5x 3x3", 64, 96, 35},
      {"inception 5x 3x3b", 96, 96, 35},
  };
  constexpr int64_t kBatch = 8;
  std::printf("%-18s %4s %4s %4s | %-26s | %-26s | %s\n", "layer", "C", "K", "H", "direct: fwd, bwd data, bwd w",
              "winograd: fwd, bwd data, bwd w", "direct / winograd, the 3 passes");
  for (const Layer& l : layers) {
    const rt::Conv2dGeometry g = rt::Conv2dGeometry::square(l.c, l.k, 3, 1, 1);
    rt::PlanContext direct, winograd;
    direct.precision = winograd.precision = rt::Precision::kBf16;
    winograd.conv_algorithm = rt::ConvAlgorithm::kWinograd;
    // The input's layout: what a direct bf16 convolution of the same size hands over.
    const auto before = rt::make_conv2d(rt::Conv2dGeometry::square(l.c, l.c, 3, 1, 1),
                                        rt::plain_spec({kBatch, l.c, l.h, l.h}), false, direct);
    const Tensor x = filled(before->y_spec(), 1.0f);
    const Tensor w = filled(rt::plain_spec(g.weight_shape()), 0.05f);
    double ms[2][3];
    {
      const auto op = rt::make_conv2d(g, x.spec(), true, direct);
      Tensor y(op->y_spec()), dx(x.spec()), dw(rt::plain_spec(g.weight_shape()));
      const Tensor dy = filled(op->y_spec(), 0.01f);
      ms[0][0] = median_ms(runs, [&] { op->forward(x, w, nullptr, y); });
      ms[0][1] = median_ms(runs, [&] { op->backward_data(dy, w, dx); });
      ms[0][2] = median_ms(runs, [&] { op->backward_weights(x, dy, dw, nullptr); });
    }
    // Ours on the same nChw16c buffers (the direct op's layouts), whether or not the plan would pick it.
    const auto op = rt::make_conv2d(g, x.spec(), true, winograd);
    const bool planned = op->algorithm() == rt::ConvAlgorithm::kWinograd;
    if (x.spec().describe().find("aBcd16b") == std::string::npos) {
      std::printf("%s: the input is %s, not nChw16c\n", l.name, x.spec().describe().c_str());
      return 1;
    }
    rt::cpu::WinogradBf16 ours({kBatch, l.c, l.k, l.h, l.h});
    Tensor y(op->y_spec()), dx(x.spec()), dw(rt::plain_spec(g.weight_shape()));
    const Tensor dy = filled(op->y_spec(), 0.01f);
    const auto bf16 = [](const Tensor& t) { return reinterpret_cast<uint16_t*>(const_cast<float*>(t.data())); };
    ms[1][0] = median_ms(runs, [&] { ours.forward(bf16(x), w.data(), nullptr, bf16(y)); });
    ms[1][1] = median_ms(runs, [&] { ours.backward_data(bf16(dy), w.data(), bf16(dx)); });
    ms[1][2] = median_ms(runs, [&] { ours.backward_weights(bf16(x), bf16(dy), dw.data(), nullptr); });
    const double sum0 = ms[0][0] + ms[0][1] + ms[0][2], sum1 = ms[1][0] + ms[1][1] + ms[1][2];
    std::printf("%-18s %4ld %4ld %4ld | %7.2f %7.2f %7.2f   | %7.2f %7.2f %7.2f   | %.2f %.2f %.2f, all %.2f%s\n",
                l.name, static_cast<long>(l.c), static_cast<long>(l.k), static_cast<long>(l.h), ms[0][0], ms[0][1],
                ms[0][2], ms[1][0], ms[1][1], ms[1][2], ms[0][0] / ms[1][0], ms[0][1] / ms[1][1], ms[0][2] / ms[1][2],
                sum0 / sum1, planned ? "" : " (the plan runs direct)");
  }
  return 0;
}
