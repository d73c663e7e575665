// Our 1x1 weight gradient as one matrix product (Note [1x1 weight gradient as a product] in
// nn/ops/cpu/one_by_one_weight_gradient.h) against oneDNN's bf16 backward-weights convolution,
// layer by layer: the 1x1 stride-1 shapes of ResNet-101 and Inception-v3 at batch 8, each with its
// count in the model. The two run alternately on the same nChw16c x and dy, a 64 MiB buffer written
// between calls so each starts with the caches holding someone else's data, as in a step. Prints
// milliseconds, medians of RUNS (default 9), and each model's sum over a step: oneDNN's on every
// layer, and the plan's choice (ours where OneByOneWeightGradient::pays).
// usage: one_by_one_weight_gradient_layers [RUNS]
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nn/ops/cpu/one_by_one_weight_gradient.h"

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

struct Layer {
  const char* model;
  int count;
  int64_t c, k, h;
};

std::vector<char> evictor(64 << 20);

double seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 9;
  if (!rt::cpu::OneByOneWeightGradient::runs(16, 16)) {
    std::printf("ours runs only where oneDNN runs avx512_core_bf16\n");
    return 1;
  }
  const Layer layers[] = {
      {"resnet101", 1, 64, 64, 56},      {"resnet101", 2, 256, 64, 56},     {"resnet101", 4, 64, 256, 56},
      {"resnet101", 1, 256, 128, 56},    {"resnet101", 3, 512, 128, 28},    {"resnet101", 4, 128, 512, 28},
      {"resnet101", 1, 512, 256, 28},    {"resnet101", 22, 1024, 256, 14},  {"resnet101", 23, 256, 1024, 14},
      {"resnet101", 1, 1024, 512, 14},   {"resnet101", 2, 2048, 512, 7},    {"resnet101", 3, 512, 2048, 7},
      {"inception_v3", 1, 64, 80, 73},   {"inception_v3", 2, 192, 64, 35},  {"inception_v3", 1, 192, 48, 35},
      {"inception_v3", 1, 192, 32, 35},  {"inception_v3", 3, 256, 64, 35},  {"inception_v3", 1, 256, 48, 35},
      {"inception_v3", 4, 288, 64, 35},  {"inception_v3", 1, 288, 48, 35},  {"inception_v3", 12, 768, 192, 17},
      {"inception_v3", 4, 768, 160, 17}, {"inception_v3", 2, 768, 128, 17}, {"inception_v3", 1, 1280, 320, 8},
      {"inception_v3", 1, 1280, 384, 8}, {"inception_v3", 1, 1280, 448, 8}, {"inception_v3", 1, 1280, 192, 8},
      {"inception_v3", 1, 2048, 320, 8}, {"inception_v3", 1, 2048, 384, 8}, {"inception_v3", 1, 2048, 448, 8},
      {"inception_v3", 1, 2048, 192, 8},
  };
  constexpr int64_t kBatch = 8;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::printf("%-13s %5s %5s %4s %6s | %9s %9s | %s\n", "model", "C", "K", "H", "count", "oneDNN", "ours",
              "oneDNN / ours (* where the plan takes ours)");
  double total[2][2] = {{0, 0}, {0, 0}};
  for (const Layer& l : layers) {
    const memory::dims x_dims{kBatch, l.c, l.h, l.h}, y_dims{kBatch, l.k, l.h, l.h}, w_dims{l.k, l.c, 1, 1};
    const memory::desc x_md(x_dims, dt::bf16, tag::nChw16c), y_md(y_dims, dt::bf16, tag::nChw16c);
    const dnnl::convolution_forward::primitive_desc fwd({dnnl::prop_kind::forward_training,
                                                         dnnl::algorithm::convolution_direct,
                                                         x_md,
                                                         memory::desc(w_dims, dt::bf16, tag::any),
                                                         y_md,
                                                         {1, 1},
                                                         {0, 0},
                                                         {0, 0}},
                                                        engine);
    const dnnl::convolution_backward_weights::primitive_desc bww({dnnl::algorithm::convolution_direct,
                                                                  x_md,
                                                                  memory::desc(w_dims, dt::f32, tag::any),
                                                                  y_md,
                                                                  {1, 1},
                                                                  {0, 0},
                                                                  {0, 0}},
                                                                 engine, fwd);
    dnnl::convolution_backward_weights onednn(bww);
    memory x(x_md, engine), dy(y_md, engine), dw(bww.diff_weights_desc(), engine);
    for (memory* m : {&x, &dy}) {
      auto* p = static_cast<uint16_t*>(m->get_data_handle());
      for (size_t i = 0; i < m->get_desc().get_size() / 2; ++i) p[i] = static_cast<uint16_t>(0x3c00 + i % 512);
    }
    std::vector<float> plain(static_cast<size_t>(l.k * l.c));
    rt::cpu::OneByOneWeightGradient ours(kBatch, l.c, l.k, l.h * l.h);
    const auto bf16 = [](const memory& m) { return static_cast<const uint16_t*>(m.get_data_handle()); };
    std::vector<double> ms[2];
    for (int run = -1; run < runs; ++run)
      for (int which = 0; which < 2; ++which) {
        for (size_t j = 0; j < evictor.size(); j += 64) evictor[j] = static_cast<char>(evictor[j] + 1);
        const double t0 = seconds();
        if (which == 0) {
          onednn.execute(stream, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dw}});
          stream.wait();
        } else {
          ours(bf16(x), bf16(dy), plain.data());
        }
        if (run >= 0) ms[which].push_back((seconds() - t0) * 1e3);
      }
    double median[2];
    for (int which = 0; which < 2; ++which) {
      std::sort(ms[which].begin(), ms[which].end());
      median[which] = ms[which][ms[which].size() / 2];
    }
    // oneDNN's everywhere, against the plan's choice layer by layer.
    const bool taken = rt::cpu::OneByOneWeightGradient::pays(l.c, l.k, l.h * l.h);
    total[l.model[0] == 'r' ? 0 : 1][0] += l.count * median[0];
    total[l.model[0] == 'r' ? 0 : 1][1] += l.count * median[taken ? 1 : 0];
    std::printf("%-13s %5ld %5ld %4ld %6d | %9.3f %9.3f | %.2f%s\n", l.model, static_cast<long>(l.c),
                static_cast<long>(l.k), static_cast<long>(l.h), l.count, median[0], median[1], median[0] / median[1],
                rt::cpu::OneByOneWeightGradient::pays(l.c, l.k, l.h * l.h) ? " *" : "");
  }
  std::printf(
      "a step's sum, oneDNN's everywhere against the plan's: resnet101 %.1f and %.1f ms (%.2f), "
      "inception_v3 %.1f and %.1f ms (%.2f)\n",
      total[0][0], total[0][1], total[0][0] / total[0][1], total[1][0], total[1][1], total[1][0] / total[1][1]);
  return 0;
}
