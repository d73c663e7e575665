// Allreduce bandwidth, ringtrain's ring (over shared memory where every rank is on one host, in
// the collective's own memory and in plain memory; over its own TCP connections; over MPI
// point-to-point) against MPI_Allreduce, in one run, alternating them at every size so
// that machine noise hits all alike. Reports the median time of the repetitions and bus bandwidth
// in the nccl-tests convention: busbw = bytes / time x 2 (p - 1) / p; ratios are against
// MPI_Allreduce's time.
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
                        [&](const std::string& m) { w.abort(m); },
                        w.oversubscribed() ? rt::StallPolicy::Idle::kYield : rt::StallPolicy::Idle::kSpin};
  // Each reduces a buffer of the collective's own memory, as the trainer's gradient arena is
  // (shared memory: zero-copy), except ring_shm_copy, which moves plain memory through the inboxes.
  struct Contender {
    std::string name;
    std::unique_ptr<rt::Collective> collective;
    bool own_memory = true;
    std::vector<double> times;
    std::shared_ptr<float> memory;
  };
  std::vector<Contender> contenders;
  auto add = [&](const char* name, const char* algorithm, const char* transport, bool own_memory) {
    contenders.push_back({name, rt::make_collective(algorithm, w.comm(), stall, transport), own_memory, {}, nullptr});
  };
  if (rt::ShmTransport::available(w.comm())) {
    add("ring_shm", "ring", "shm", true);
    add("ring_shm_copy", "ring", "shm", false);
  }
  add("ring_tcp", "ring", "tcp", true);
  add("ring_mpi", "ring", "mpi", true);
  add("mpi", "mpi", "auto", true);
  std::vector<float> plain(static_cast<size_t>(max_bytes / 4), 1.0f + static_cast<float>(w.rank()));
  for (Contender& c : contenders) {
    const size_t n = static_cast<size_t>(max_bytes / 4);
    c.memory = c.own_memory ? c.collective->allocate(n) : std::shared_ptr<float>(plain.data(), [](float*) {});
    std::fill(c.memory.get(), c.memory.get() + n, 1.0f + static_cast<float>(w.rank()));
  }
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
      std::printf("# link over MPI: %.2f GB/s per rank to its ring neighbour (64 MiB in 1 MiB messages, all ranks at "
                  "once)\n",
                  n * 4.0 / best / 1e9);
    // The same over plain TCP sockets: what the wire carries when nothing but the kernel touches
    // the bytes (one 64 MiB stream each way per rank, through the TCP transport's plain receive).
    rt::TcpTransport tcp(w.comm(), stall);
    best = 1e30;
    for (int k = 0; k < 4; ++k) {
      w.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      const auto r = tcp.post_recv(in.data(), in.size() * 4, (w.rank() + w.size() - 1) % w.size());
      const auto s = tcp.post_send(out.data(), out.size() * 4, (w.rank() + 1) % w.size());
      tcp.wait(r, {});
      tcp.wait(s, {});
      tcp.reset();
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, w.comm());
      if (k > 0) best = std::min(best, dt);
    }
    if (w.rank() == 0)
      std::printf("# link over TCP: %.2f GB/s per rank to its ring neighbour (one 64 MiB stream, all ranks at once)\n",
                  n * 4.0 / best / 1e9);
  }
  if (w.rank() == 0) {
    std::printf("# ranks=%d host=%s reps=%d (median); busbw in GB/s; ratio = MPI_Allreduce time / ours\n# %12s",
                w.size(), w.host().c_str(), reps, "bytes");
    for (const Contender& c : contenders) std::printf(" %10s_ms %10s_bw", c.name.c_str(), c.name.c_str());
    for (size_t i = 0; i + 1 < contenders.size(); ++i) std::printf(" %14s", (contenders[i].name + "_ratio").c_str());
    std::printf("\n");
  }
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const int64_t n = bytes / 4;
    const int r = bytes >= (int64_t{64} << 20) ? std::max(3, reps / 2) : reps;
    for (Contender& c : contenders) c.times.clear();
    for (int k = 0; k < r + 1; ++k)  // the first of each is a warm-up
      for (Contender& c : contenders) {
        w.barrier();
        const auto t0 = std::chrono::steady_clock::now();
        c.collective->average(c.memory.get(), n, {});
        double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // The slowest rank's time is the collective's time.
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, w.comm());
        if (k > 0) c.times.push_back(dt);
      }
    if (w.rank() == 0) {
      std::printf("  %12lld", static_cast<long long>(bytes));
      for (const Contender& c : contenders) {
        const double t = median(c.times);
        std::printf(" %13.3f %13.2f", t * 1e3, bytes / t * bus / 1e9);
      }
      const double t_mpi = median(contenders.back().times);
      for (size_t i = 0; i + 1 < contenders.size(); ++i) std::printf(" %13.2fx", t_mpi / median(contenders[i].times));
      std::printf("\n");
    }
  }
  contenders.clear();
  w.finalize();
  return 0;
}
