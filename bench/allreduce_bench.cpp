// Allreduce bandwidth, ringtrain's ring (over shared memory where every rank is on one host, in
// the collective's own memory and in plain memory; over its own TCP connections; over MPI
// point-to-point) against MPI_Allreduce, in one run, alternating them at every size so
// that machine noise hits all alike. Reports the median time of the repetitions and bus bandwidth
// in the nccl-tests convention: busbw = bytes / time x 2 (p - 1) / p; ratios are against
// MPI_Allreduce's time.
// With --wire fp16|bf16, ring_tcp_<wire> joins them: the TCP ring with gradients on a 16-bit wire
// (dist.wire); its bytes are the float32 buffer's, as for the others.
// usage: mpirun -np P allreduce_bench [--min-bytes 4096] [--max-bytes 268435456] [--reps 9] [--wire fp16]
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

// Not an allreduce: what the ring's links carry, for the same sizes. Each rank streams as many
// bytes as a ring allreduce of `count` floats sends per rank (2 (p - 1) / p of them) to its
// successor while receiving as many from its predecessor, over plain TCP sockets, from and into
// one cache-sized buffer (as iperf measures a link): nothing but the kernel touches the bytes.
// Its busbw is the ceiling of ring_tcp's.
class TcpLinkProbe final : public rt::Collective {
 public:
  TcpLinkProbe(MPI_Comm comm, const rt::StallPolicy& stall) : t_(comm, stall), out_(kPiece, 1), in_(kPiece) {}
  std::string describe() const override { return "plain TCP streaming"; }
  void average(float*, int64_t count, const rt::WaitContext& context) override {
    const int p = t_.world();
    const size_t bytes = static_cast<size_t>(count) * 4 * 2 * static_cast<size_t>(p - 1) / static_cast<size_t>(p);
    std::vector<rt::Transport::Handle> handles;
    for (size_t at = 0; at < bytes; at += kPiece) {
      const size_t n = std::min(kPiece, bytes - at);
      handles.push_back(t_.post_recv(in_.data(), n, (t_.rank() + p - 1) % p));
      handles.push_back(t_.post_send(out_.data(), n, (t_.rank() + 1) % p));
    }
    for (rt::Transport::Handle h : handles) t_.wait(h, context);
    t_.reset();
  }

 private:
  static constexpr size_t kPiece = size_t{256} << 10;
  rt::TcpTransport t_;
  std::vector<char> out_, in_;
};

}  // namespace

int main(int argc, char** argv) {
  rt::World& w = rt::World::init(&argc, &argv);
  int64_t min_bytes = 4096, max_bytes = int64_t{256} << 20;
  int reps = 9;
  std::string wire = "fp32";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--min-bytes")) min_bytes = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--max-bytes")) max_bytes = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--wire")) wire = argv[i + 1];
  }
  if (w.size() < 2) {
    std::cerr << "allreduce_bench: run under mpirun with at least 2 ranks\n";
    return 1;
  }
  rt::StallPolicy stall{60, 300, [](const std::string& m) { std::cerr << m << "\n"; },
                        [&](const std::string& m) { w.abort(m); },
                        w.oversubscribed() ? rt::StallPolicy::Idle::kYield : rt::StallPolicy::Idle::kSpin};
  // Each reduces a buffer of the collective's own memory, as the trainer's gradient arena is
  // (shared memory: zero-copy), except ring_shm_copy, which moves plain memory through the inboxes;
  // link_tcp is what the TCP links carry (TcpLinkProbe). The last, MPI_Allreduce, is the baseline.
  struct Contender {
    std::string name;
    std::unique_ptr<rt::Collective> collective;
    bool own_memory = true;
    std::vector<double> times;
    std::shared_ptr<float> memory;
  };
  std::vector<Contender> contenders;
  auto add = [&](const std::string& name, const char* algorithm, const char* transport, bool own_memory,
                 rt::Wire on_wire = rt::Wire::kFp32) {
    contenders.push_back(
        {name, rt::make_collective(algorithm, w.comm(), stall, transport, "", on_wire), own_memory, {}, nullptr});
  };
  if (rt::ShmTransport::available(w.comm())) {
    add("ring_shm", "ring", "shm", true);
    add("ring_shm_copy", "ring", "shm", false);
  }
  add("ring_tcp", "ring", "tcp", true);
  if (wire != "fp32") add("ring_tcp_" + wire, "ring", "tcp", true, rt::parse_wire(wire));
  add("ring_mpi", "ring", "mpi", true);
  contenders.push_back({"link_tcp", std::make_unique<TcpLinkProbe>(w.comm(), stall), false, {}, nullptr});
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
        MPI_Irecv(in.data() + at, static_cast<int>(slice), MPI_FLOAT, (w.rank() + w.size() - 1) % w.size(), 7, w.comm(),
                  &reqs.back());
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
      std::printf(
          "# link over MPI: %.2f GB/s per rank to its ring neighbour (64 MiB in 1 MiB messages, all ranks at "
          "once)\n",
          n * 4.0 / best / 1e9);
  }
  if (w.rank() == 0) {
    std::printf(
        "# ranks=%d host=%s reps=%d (median); busbw in GB/s; ratio = MPI_Allreduce time / ours; "
        "ring_tcp_of_link = link_tcp time / ring_tcp time\n# %12s",
        w.size(), w.host().c_str(), reps, "bytes");
    for (const Contender& c : contenders) std::printf(" %10s_ms %10s_bw", c.name.c_str(), c.name.c_str());
    for (size_t i = 0; i + 1 < contenders.size(); ++i)
      if (contenders[i].name != "link_tcp") std::printf(" %14s", (contenders[i].name + "_ratio").c_str());
    std::printf(" %16s\n", "ring_tcp_of_link");
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
      double t_link = 0, t_tcp = 0;
      for (size_t i = 0; i + 1 < contenders.size(); ++i) {
        const double t = median(contenders[i].times);
        if (contenders[i].name == "link_tcp") {
          t_link = t;
          continue;
        }
        if (contenders[i].name == "ring_tcp") t_tcp = t;
        std::printf(" %13.2fx", t_mpi / t);
      }
      std::printf(" %15.0f%%\n", 100 * t_link / t_tcp);
    }
  }
  contenders.clear();
  w.finalize();
  return 0;
}
