// The agreed reductions on the CPU (Note [Agreed reductions]): chunks in parallel, each in a
// fixed order, their results combined in chunk order.
#include "nn/ops/agreed_reductions.h"

#include <xxhash.h>

#include <algorithm>
#include <vector>

#include "nn/ops/cpu/make.h"

namespace rt::cpu {
namespace {

// f(chunk, its length) for each kAgreedChunk-sized chunk of x, in parallel, in chunk order.
template <typename F>
auto per_chunk(const float* x, int64_t n, F f) {
  std::vector<decltype(f(x, n))> results(static_cast<size_t>((n + kAgreedChunk - 1) / kAgreedChunk));
  const auto chunks = static_cast<int64_t>(results.size());
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kAgreedChunk;
    results[static_cast<size_t>(c)] = f(x + begin, std::min(kAgreedChunk, n - begin));
  }
  return results;
}

// Eight running sums, element i into sum i % 8, then added in lane order: a fixed order the
// compiler can still vectorise.
double chunk_sum_of_squares(const float* x, int64_t n) {
  double lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lane[j] += static_cast<double>(x[i + j]) * x[i + j];
  for (; i < n; ++i) lane[i % 8] += static_cast<double>(x[i]) * x[i];
  double sum = 0;
  for (double l : lane) sum += l;
  return sum;
}

}  // namespace

double sum_of_squares(const float* x, int64_t n) {
  double sum = 0;
  for (double p : per_chunk(x, n, chunk_sum_of_squares)) sum += p;
  return sum;
}

uint64_t fingerprint(const float* x, int64_t n) {
  const std::vector<XXH64_hash_t> hashes = per_chunk(x, n, [](const float* chunk, int64_t length) {
    return XXH3_64bits(chunk, sizeof(float) * static_cast<size_t>(length));
  });
  return XXH3_64bits(hashes.data(), sizeof(XXH64_hash_t) * hashes.size());
}

}  // namespace rt::cpu
