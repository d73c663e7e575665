// Allreduce bandwidth, ringtrain's ring against MPI_Allreduce, in one run, alternating the two at
// every size so that machine noise hits both alike. Reports the median time of the repetitions
// and bus bandwidth in the nccl-tests convention: busbw = bytes / time x 2 (p - 1) / p.
// usage: mpirun -np P allreduce_bench [--min-bytes 4096] [--max-bytes 268435456] [--reps 9]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "dist/collective.h"
#include "dist/world.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  rt::World& w = rt::World::init(&argc, &argv);
  int64_t min_bytes = 4096, max_bytes = int64_t{256} << 20;
  int reps = 9;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--min-bytes")) min_bytes = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--max-bytes")) max_bytes = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  if (w.size() < 2) {
    std::cerr << "allreduce_bench: run under mpirun with at least 2 ranks\n";
    return 1;
  }
  rt::StallPolicy stall{60, 300, [](const std::string& m) { std::cerr << m << "\n"; },
                        [&](const std::string& m) { w.abort(m); }};
  auto ring = rt::make_collective("ring", w.comm(), stall);
  auto mpi = rt::make_collective("mpi", w.comm(), stall);
  const double bus = 2.0 * (w.size() - 1) / w.size();
  {
    // What the path between neighbours carries: each rank streams 64 MiB to the next while
    // receiving as much from the previous (the ring's traffic pattern), as 64 messages of 1 MiB
    // in flight at once, best of 3.
    const int64_t n = int64_t{16} << 20, slice = int64_t{1} << 18;
    std::vector<float> out(static_cast<size_t>(n), 1.0f), in(static_cast<size_t>(n));
    double best = 1e30;
    for (int k = 0; k < 4; ++k) {
      w.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<MPI_Request> reqs;
      for (int64_t at = 0; at < n; at += slice) {
        reqs.emplace_back();
        MPI_Irecv(in.data() + at, static_cast<int>(slice), MPI_FLOAT, (w.rank() + w.size() - 1) % w.size(), 7,
                  w.comm(), &reqs.back());
        reqs.emplace_back();
        MPI_Isend(out.data() + at, static_cast<int>(slice), MPI_FLOAT, (w.rank() + 1) % w.size(), 7, w.comm(),
                  &reqs.back());
      }
      MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, w.comm());
      if (k > 0) best = std::min(best, dt);
    }
    if (w.rank() == 0)
      std::printf("# link: %.2f GB/s per rank to its ring neighbour (64 MiB in 1 MiB messages, all ranks at once)\n",
                  n * 4.0 / best / 1e9);
  }
  if (w.rank() == 0)
    std::printf("# ranks=%d host=%s reps=%d (median)\n# %12s %12s %12s %12s %12s %8s\n", w.size(), w.host().c_str(), reps,
                "bytes", "ring_ms", "mpi_ms", "ring_busbw", "mpi_busbw", "ratio");
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const int64_t n = bytes / 4;
    std::vector<float> data(static_cast<size_t>(n), 1.0f + static_cast<float>(w.rank()));
    std::vector<double> t_ring, t_mpi;
    const int r = bytes >= (int64_t{64} << 20) ? std::max(3, reps / 2) : reps;
    for (int k = 0; k < r + 1; ++k)  // the first of each is a warm-up
      for (rt::Collective* c : {ring.get(), mpi.get()}) {
        w.barrier();
        const auto t0 = std::chrono::steady_clock::now();
        c->average(data.data(), n, {});
        double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // The slowest rank's time is the collective's time.
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, w.comm());
        if (k > 0) (c == ring.get() ? t_ring : t_mpi).push_back(dt);
      }
    const double tr = median(t_ring), tm = median(t_mpi);
    if (w.rank() == 0)
      std::printf("  %12lld %12.3f %12.3f %10.2f GB/s %8.2f GB/s %7.2fx\n", static_cast<long long>(bytes), tr * 1e3,
                  tm * 1e3, bytes / tr * bus / 1e9, bytes / tm * bus / 1e9, tm / tr);
  }
  ring.reset();
  mpi.reset();
  w.finalize();
  return 0;
}
