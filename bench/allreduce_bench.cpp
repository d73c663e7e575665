// Allreduce bandwidth, ringtrain's ring (over shared memory where every rank is on one host, in
// the collective's own memory and in plain memory; over its own TCP connections; over MPI
// point-to-point) against MPI_Allreduce, in one run, alternating them at every size so
// that machine noise hits all alike. Reports the median time of the repetitions and bus bandwidth
// in the nccl-tests convention: busbw = bytes / time x 2 (p - 1) / p; ratios are against
// MPI_Allreduce's time.
// With --wire fp16|bf16, ring_tcp_<wire> joins them: the TCP ring with gradients on a 16-bit wire
// (dist.wire); its bytes are the float32 buffer's, as for the others. Where ranks span hosts with
// more than one on each (or RINGTRAIN_FAKE_HOST_RANKS splits this one), ring_2lvl joins them: the
// two-level ring (Note [Two-level ring]), shared memory inside hosts and TCP between.
// --link IFACE[,IFACE]: also what crossed those network interfaces (every host's lowest rank reads
// the transmit counters of those it has around each contender's runs), as bytes per reduced byte: the cost of a
// collective in the currency of the links between hosts. --only a,b runs those contenders alone.
// usage: mpirun -np P allreduce_bench [--min-bytes 4096] [--max-bytes 268435456] [--reps 9] [--wire fp16]
//                                     [--link rt-veth-a,rt-veth-b] [--only ring_tcp,ring_2lvl]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "dist/collective.h"
#include "dist/shm_transport.h"
#include "dist/tcp_transport.h"
#include "dist/two_level_collective.h"
#include "dist/world.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Bytes this host has sent so far on those of `ifaces` (comma-separated) it has.
double transmitted_bytes(const std::string& ifaces) {
  double total = 0;
  size_t at = 0;
  while (at <= ifaces.size()) {
    const size_t end = std::min(ifaces.find(',', at), ifaces.size());
    const std::string path = rt::str_cat("/sys/class/net/", ifaces.substr(at, end - at), "/statistics/tx_bytes");
    at = end + 1;
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (!f) continue;
    unsigned long long n = 0;
    if (std::fscanf(f, "%llu", &n) == 1) total += static_cast<double>(n);
    std::fclose(f);
  }
  return total;
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

 protected:
  rt::PhaseSwitch reduce(float*, int64_t count, const rt::WaitContext& context, const rt::ShardUpdate*) override {
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
    return std::nullopt;
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
  std::string wire = "fp32", link, only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--link")) link = argv[i + 1];
    if (!std::strcmp(argv[i], "--only")) only = rt::str_cat(",", argv[i + 1], ",");
    if (!std::strcmp(argv[i], "--min-bytes")) min_bytes = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--max-bytes")) max_bytes = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--wire")) wire = argv[i + 1];
  }
  if (w.size() < 2) {
    std::cerr << "allreduce_bench: run under mpirun with at least 2 ranks\n";
    return 1;
  }
  if (!rt::enum_named<rt::Wire>(wire)) {
    std::cerr << "allreduce_bench: --wire " << wire << ": expected fp32, fp16 or bf16\n";
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
    double crossed = 0;  // bytes sent on --link by every host, over the timed runs
  };
  std::vector<Contender> contenders;
  const auto wanted = [&](const std::string& name) {
    return only.empty() || only.find(rt::str_cat(",", name, ",")) != only.npos;
  };
  auto add = [&](const std::string& name, rt::Allreduce algorithm, rt::TransportChoice transport, bool own_memory,
                 rt::Wire on_wire = rt::Wire::kFp32, rt::Hierarchy hierarchy = rt::Hierarchy::kFlat) {
    if (!wanted(name)) return;
    contenders.push_back({name,
                          rt::make_collective({algorithm, transport, "", hierarchy, on_wire}, w.comm(), stall),
                          own_memory,
                          {},
                          nullptr});
  };
  const rt::HostLayout layout = rt::host_layout(w.comm());
  const bool host_reads_link = !link.empty() && layout.ranks_of_host[layout.host_of_rank[w.rank()]][0] == w.rank();
  if (rt::ShmTransport::available(w.comm())) {
    add("ring_shm", rt::Allreduce::kRing, rt::TransportChoice::kShm, true);
    add("ring_shm_copy", rt::Allreduce::kRing, rt::TransportChoice::kShm, false);
  }
  const rt::Wire on_wire = *rt::enum_named<rt::Wire>(wire);
  add("ring_tcp", rt::Allreduce::kRing, rt::TransportChoice::kTcp, true);
  if (wire != "fp32") add("ring_tcp_" + wire, rt::Allreduce::kRing, rt::TransportChoice::kTcp, true, on_wire);
  if (rt::resolve_hierarchy(rt::Hierarchy::kAuto, layout) == rt::Hierarchy::kTwoLevel) {
    add("ring_2lvl", rt::Allreduce::kRing, rt::TransportChoice::kTcp, true, rt::Wire::kFp32, rt::Hierarchy::kTwoLevel);
    if (wire != "fp32")
      add("ring_2lvl_" + wire, rt::Allreduce::kRing, rt::TransportChoice::kTcp, true, on_wire,
          rt::Hierarchy::kTwoLevel);
  }
  add("ring_mpi", rt::Allreduce::kRing, rt::TransportChoice::kMpi, true);
  if (wanted("link_tcp"))
    contenders.push_back({"link_tcp", std::make_unique<TcpLinkProbe>(w.comm(), stall), false, {}, nullptr});
  add("mpi", rt::Allreduce::kMpi, rt::TransportChoice::kAuto, true);
  if (contenders.empty()) {
    if (w.rank() == 0) std::cerr << "allreduce_bench: --only " << only << " names no contender of this run\n";
    return 1;
  }
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
        "# ranks=%d (%s) host=%s reps=%d (median); busbw in GB/s; ratio = last contender's time / ours; "
        "ring_tcp_of_link = link_tcp time / ring_tcp time%s\n# %12s",
        w.size(), layout.describe().c_str(), w.host().c_str(), reps,
        link.empty() ? "" : rt::str_cat("; _x = bytes sent on ", link, " by all hosts per reduced byte").c_str(),
        "bytes");
    for (const Contender& c : contenders) std::printf(" %10s_ms %10s_bw", c.name.c_str(), c.name.c_str());
    for (size_t i = 0; i + 1 < contenders.size(); ++i)
      if (contenders[i].name != "link_tcp") std::printf(" %14s", (contenders[i].name + "_ratio").c_str());
    std::printf(" %16s", "ring_tcp_of_link");
    if (!link.empty())
      for (const Contender& c : contenders) std::printf(" %12s", (c.name + "_x").c_str());
    std::printf("\n");
  }
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const int64_t n = bytes / 4;
    const int r = bytes >= (int64_t{64} << 20) ? std::max(3, reps / 2) : reps;
    for (Contender& c : contenders) c.times.clear(), c.crossed = 0;
    for (int k = 0; k < r + 1; ++k)  // the first of each is a warm-up
      for (Contender& c : contenders) {
        // Read before the barrier: after it, a neighbour may already be sending this run's bytes.
        const double sent_before = host_reads_link ? transmitted_bytes(link) : 0;
        w.barrier();
        const auto t0 = std::chrono::steady_clock::now();
        c.collective->average(c.memory.get(), n, {});
        double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!link.empty()) {
          // Every rank done, and a moment for the kernel's counters (veth counts a packet when its
          // peer has taken it in) to catch up: outside the timed window.
          w.barrier();
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        double crossed = host_reads_link ? transmitted_bytes(link) - sent_before : 0;
        MPI_Allreduce(MPI_IN_PLACE, &crossed, 1, MPI_DOUBLE, MPI_SUM, w.comm());
        if (k > 0) c.crossed += crossed;
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
      std::printf(" %15.0f%%", t_tcp > 0 ? 100 * t_link / t_tcp : 0.0);
      if (!link.empty())
        for (const Contender& c : contenders) std::printf(" %12.3f", c.crossed / r / static_cast<double>(bytes));
      std::printf("\n");
    }
  }
  contenders.clear();
  w.finalize();
  return 0;
}
