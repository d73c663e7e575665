// Our batched bf16 products (Note [bf16 pair products] in nn/ops/cpu/bf16_pair_product.h) against
// oneDNN's batched bf16 matmul, on the products the bf16 Winograd makes at batch 8: 16 matrices
// of one chunk of tiles, forward (A row-major) and backward weights (A read transposed: oneDNN
// through strides, ours pair-major). The two alternate, and between calls a 64 MiB buffer is
// written, so each starts with the caches holding someone else's data. Prints milliseconds and
// G multiply-adds/s, medians of RUNS (default 15).
// usage: bf16_pair_product_shapes [RUNS]
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "nn/cpu_bf16.h"
#include "nn/ops/cpu/bf16_pair_product.h"

namespace {

struct Shape {
  const char* name;
  int64_t m, k, n;
  bool transposed_a;  // backward weights: A is the transformed tiles, read across
};

std::vector<char> evictor(64 << 20);

template <class F>
double ms_of(F&& f) {
  for (size_t j = 0; j < evictor.size(); j += 64) evictor[j] = static_cast<char>(evictor[j] + 1);
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 15;
  if (!rt::cpu::pair_products_run() || !rt::cpu_bf16().runs) {
    std::printf("needs AVX-512 F and BW and oneDNN's bf16 kernels (here: %s)\n", rt::cpu_bf16().isa.c_str());
    return 1;
  }
  const Shape shapes[] = {
      {"vgg block3 fwd", 896, 256, 256, false},    {"vgg block3 bwd w", 256, 896, 256, true},
      {"vgg block4 fwd", 392, 512, 512, false},    {"vgg block4 bwd w", 512, 392, 512, true},
      {"vgg 256->512 fwd", 392, 256, 512, false},  {"vgg 256->512 bwd w", 256, 392, 512, true},
      {"resnet layer3 fwd", 392, 256, 256, false}, {"resnet layer3 bwd w", 256, 392, 256, true},
  };
  constexpr int64_t kBatch = 16;  // a 4x4 tile's positions
  using dt = dnnl::memory::data_type;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::printf("%-20s %5s %5s %5s | %-17s | %-17s | %s\n", "product", "M", "K", "N", "oneDNN: ms, G/s", "ours: ms, G/s",
              "oneDNN / ours");
  for (const Shape& s : shapes) {
    std::vector<uint16_t> a(static_cast<size_t>(kBatch * s.m * s.k)), b(static_cast<size_t>(kBatch * s.k * s.n));
    std::vector<float> c_store(static_cast<size_t>(kBatch * s.m * s.n) + 16);
    float* c = c_store.data() + (16 - reinterpret_cast<uintptr_t>(c_store.data()) % 64 / 4) % 16;
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint16_t>(0x3f80 + i * 7919 % 127);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint16_t>(0xbf80 + i * 104729 % 127);
    // oneDNN as the Winograd called it: A (m x k) plain or read through (k x m)'s strides.
    const dnnl::memory::desc a_md(
        {kBatch, s.m, s.k}, dt::bf16,
        s.transposed_a ? dnnl::memory::dims{s.m * s.k, 1, s.m} : dnnl::memory::dims{s.m * s.k, s.k, 1});
    const dnnl::memory::desc b_md({kBatch, s.k, s.n}, dt::bf16, dnnl::memory::format_tag::abc);
    const dnnl::memory::desc c_md({kBatch, s.m, s.n}, dt::f32, dnnl::memory::format_tag::abc);
    dnnl::matmul theirs(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), engine));
    dnnl::memory a_mem(a_md, engine, a.data()), b_mem(b_md, engine, b.data()), c_mem(c_md, engine, c);
    rt::cpu::PairProduct ours;
    ours.batch = kBatch, ours.m = s.m, ours.n = s.n, ours.k = s.k;
    ours.a = a.data(), ours.a_batch = s.m * s.k / 2;
    ours.a_row = s.transposed_a ? 1 : s.k / 2;
    ours.a_pair = s.transposed_a ? s.m : 1;
    ours.b = b.data(), ours.b_batch = s.k * s.n;
    ours.c = c, ours.c_batch = s.m * s.n;
    auto run_theirs = [&] {
      theirs.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
      stream.wait();
    };
    auto run_ours = [&] { rt::cpu::multiply_pairs(ours); };
    run_theirs();  // oneDNN's lazy set-up
    run_ours();
    std::vector<double> t_theirs, t_ours;
    for (int r = 0; r < runs; ++r) {
      t_theirs.push_back(ms_of(run_theirs));
      t_ours.push_back(ms_of(run_ours));
    }
    const double theirs_ms = median(t_theirs), ours_ms = median(t_ours);
    const double macs = static_cast<double>(kBatch * s.m * s.k * s.n);
    std::printf("%-20s %5ld %5ld %5ld | %7.3f %7.1f   | %7.3f %7.1f   | %.2f\n", s.name, static_cast<long>(s.m),
                static_cast<long>(s.k), static_cast<long>(s.n), theirs_ms, macs / theirs_ms / 1e6, ours_ms,
                macs / ours_ms / 1e6, theirs_ms / ours_ms);
  }
  return 0;
}
