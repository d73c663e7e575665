// What Note [Naming the straggler]'s measurement adds to a training step: the clock reads it
// makes (4 a step in the trainer, and per slice received over the ring's own TCP 2, for its
// first byte and its last), counted for a model's gradient arena at a world
// size from the ring's own schedule and slice size, times the measured cost of one read.
// usage: straggler_cost FLOATS BUCKETS RANKS [SLICE_FLOATS]
//   FLOATS: the gradient arena (ringtrain info --model M says the parameters), BUCKETS: how many
//   allreduces a step makes (ringtrain's start line says), RANKS: the world size.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "dist/ring_schedule.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: straggler_cost FLOATS BUCKETS RANKS [SLICE_FLOATS]\n");
    return 2;
  }
  const int64_t floats = std::atoll(argv[1]), buckets = std::atoll(argv[2]);
  const int ranks = std::atoi(argv[3]);
  const int64_t slice = argc > 4 ? std::atoll(argv[4]) : int64_t{1} << 17;
  // One read's cost: the median of 7 runs of 10 million.
  std::vector<double> ns;
  for (int run = 0; run < 7; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    int64_t sink = 0;
    for (int i = 0; i < 10'000'000; ++i) sink += std::chrono::steady_clock::now().time_since_epoch().count() & 1;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (sink < 0) std::printf("?");  // keeps the loop
    ns.push_back(1e9 * s / 1e7);
  }
  std::sort(ns.begin(), ns.end());
  // The reads of one step: every receive of every ring step of every bucket is sliced.
  int64_t reads = 4;
  for (int64_t b = 0; b < buckets; ++b) {
    const int64_t count = floats / buckets;
    for (int step = 0; step < rt::ring_step_count(ranks); ++step) {
      const int64_t chunk = rt::chunk_range(count, ranks, rt::ring_step(0, ranks, step).recv_chunk).count;
      reads += 2 * ((chunk + slice - 1) / slice);
    }
  }
  std::printf(
      "clock read: %.1f ns (median of 7 x 10^7)\nreads a step: %lld (%lld floats in %lld buckets, %d ranks)\n"
      "added to a step: %.1f us\n",
      ns[3], static_cast<long long>(reads), static_cast<long long>(floats), static_cast<long long>(buckets), ranks,
      ns[3] * static_cast<double>(reads) / 1e3);
  return 0;
}
