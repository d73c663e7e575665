// What PowerSGD's products cost a rank per element of a compressed tensor (Note [PowerSGD] in
// dist/powersgd.h): compress (P = M Q), project (Q = M^T P) and decompress (P Q^T and the error)
// of one n x m gradient, timed together, at each rank k. The simulator's cluster files take the
// figures as [compute] powersgd_ns_per_element (at rank 1) and powersgd_ns_per_rank (each rank more).
// Prints one row per k: the median of RUNS runs, in ns per element, then the least-squares line.
// --gpu: the same phases on the first GPU (dist/cuda/device_powersgd.h: cuBLAS's products and the
// agreed kernels), timed with CUDA events; the GPU check runs it.
// usage: powersgd_products [--gpu] [N M [RUNS [K...]]]   (default 4096 x 25088, VGG-16's first
//        classifier layer, 5 runs, k = 1 2 4 8)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "dist/cuda/device_powersgd.h"
#include "dist/powersgd.h"
#include "nn/device.h"

namespace {

// One run's ns per element on the host: compress, project and decompress, timed together.
double host_ns_per_element(int64_t n, int64_t m, int64_t k, int runs, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> grad(static_cast<size_t>(n * m)), error(grad.size(), 0.0f), out(grad.size());
  for (float& x : grad) x = normal(rng);
  const rt::PowerSgdMatrix t{n, m, k};
  std::vector<float> q(static_cast<size_t>(m * k)), p(static_cast<size_t>(n * k)), q_local(q.size());
  for (float& x : q) x = normal(rng);
  std::vector<double> ns;
  for (int run = 0; run < runs; ++run) {
    std::copy(grad.begin(), grad.end(), out.begin());
    const auto t0 = std::chrono::steady_clock::now();
    t.compress(out.data(), error.data(), q.data(), p.data());
    t.project(error.data(), p.data(), q_local.data());
    t.decompress(p.data(), q_local.data(), out.data(), error.data());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ns.push_back(1e9 * s / static_cast<double>(n * m));
  }
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const bool gpu = argc > 1 && std::string(argv[1]) == "--gpu";
  if (gpu) --argc, ++argv;
  const int64_t n = argc > 2 ? std::atoll(argv[1]) : 4096, m = argc > 2 ? std::atoll(argv[2]) : 25088;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 5;
  std::vector<int64_t> ks;
  for (int i = 4; i < argc; ++i) ks.push_back(std::atoll(argv[i]));
  if (ks.empty()) ks = {1, 2, 4, 8};
  if (n < 1 || m < 1 || runs < 1) {
    std::fprintf(stderr, "usage: powersgd_products [--gpu] [N M [RUNS [K...]]]\n");
    return 2;
  }
  if (gpu) {
    std::string why;
    if (!rt::cuda_usable(&why)) {
      std::fprintf(stderr, "powersgd_products: --gpu, but no usable GPU: %s\n", why.c_str());
      return 1;
    }
    rt::select_cuda_device(0);
  }
  std::mt19937 rng(1);
  std::printf("# powersgd_products: %lld x %lld on %s, median of %d runs\n# k ns_per_element\n",
              static_cast<long long>(n), static_cast<long long>(m), gpu ? "the GPU" : "one host thread", runs);
  double sk = 0, sy = 0, skk = 0, sky = 0;
  for (const int64_t k : ks) {
    const double median = gpu ? 1e9 * rt::powersgd_kernels::products_seconds(n, m, k, runs) / static_cast<double>(n * m)
                              : host_ns_per_element(n, m, k, runs, rng);
    std::printf("%lld %.4f\n", static_cast<long long>(k), median);
    const auto x = static_cast<double>(k - 1);
    sk += x, sy += median, skk += x * x, sky += x * median;
  }
  const auto count = static_cast<double>(ks.size());
  const double denominator = count * skk - sk * sk;
  const double per_rank = denominator > 0 ? (count * sky - sk * sy) / denominator : 0;
  std::printf("# powersgd_ns_per_element = %.4f, powersgd_ns_per_rank = %.4f\n", (sy - per_rank * sk) / count,
              per_rank);
  return 0;
}
