// A job for device_watch_job_test.sh: the GPU collectives' watchdog wiring (DeviceWatch and
// CommGate, dist/device_watch.h) in a real MPI job without a GPU. A GradReducer averages a small
// arena step after step over a ring whose exchanges are host-staged MPI stand-ins that block on
// the host until their peer answers, as NCCL's calls do while it connects; the flat ring or the
// two-level ring, with the device collectives' pieces, warm-up and abort times. One rank
// (the victim) freezes; the others' watchdog must end the job, naming it, and no thread may call
// into a communicator after the abort.
//
// usage: device_watch_job flat|two_level none|before_warm_up|before_first_step|mid_run VICTIM ABORT_S WARN_S
//   (ABORT_S and WARN_S: dist.stall_abort_s and dist.stall_warn_s)
//   none: 8 steps, each checked against the average; exit 0.
//   before_warm_up: the victim sleeps before the set-up's warm-up, its first exchange.
//   before_first_step: the victim sleeps after set-up, before step 1's first exchange.
//   mid_run: the victim stops (SIGSTOP) after step 3.
// The victim prints "freeze_at=SECONDS" (the epoch) as it freezes. An aborting rank waits half a
// second, prints "rank R: calls into a communicator after the abort: N, threads parked: P", then
// ends the job as the trainer does (World::abort).
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/check.h"
#include "base/stderr_line.h"
#include "dist/bucket_plan.h"
#include "dist/device_watch.h"
#include "dist/exchange_primitives.h"
#include "dist/grad_reducer.h"
#include "dist/host_layout.h"
#include "dist/ring_schedule.h"
#include "dist/two_level_collective.h"
#include "dist/two_level_ring.h"
#include "dist/world.h"

namespace rt {
namespace {

// Host memory over MPI on comm, blocking on the host until both transfers are done, or until the
// communicator is aborted (as ncclCommAbort ends NCCL's calls). Every call passes the gate.
class StagedExchange final : public DeviceExchange {
 public:
  explicit StagedExchange(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &world_);
  }
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string describe() const override { return "a host-staged MPI exchange"; }
  void warm_up(void* stream) override { warm_up_ring(&warm_[0], &warm_[1], stream); }
  std::string async_error() override {
    gate().attempt([&] { reached(); });
    return "";
  }
  void exchange(const void* send, size_t send_bytes, int next, void* recv, size_t recv_bytes, int prev,
                void*) override {
    gate().pass(CommGate::Call::kMayBlock, [&] {
      reached();
      MPI_Request r[2];
      MPI_Irecv(recv, static_cast<int>(recv_bytes), MPI_BYTE, prev, 21, comm_, &r[0]);
      MPI_Isend(send, static_cast<int>(send_bytes), MPI_BYTE, next, 21, comm_, &r[1]);
      for (int done = 0; !done && !ended_;) {
        MPI_Testall(2, r, &done, MPI_STATUSES_IGNORE);
        if (!done) std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
  }
  int after_end() const { return after_end_.load(); }

 protected:
  void end_transfers() override { ended_ = true; }

 private:
  void reached() {
    if (ended_) ++after_end_;
  }
  MPI_Comm comm_;
  int rank_ = 0, world_ = 1;
  int warm_[2] = {};
  std::atomic<bool> ended_{false};
  std::atomic<int> after_end_{0};
};

DeviceWatch::Mark finished_when_enqueued() {
  // Host-staged: a phase's work is done when its calls return.
  return [](int, int) { return std::function<bool()>([] { return true; }); };
}

// The flat ring (DeviceRing) or the two-level ring (DeviceTwoLevelRing) on host memory.
class StagedCollective final : public Collective {
 public:
  // *self is set first: the abort's report reads it, from set-up's warm-up on.
  StagedCollective(std::atomic<StagedCollective*>* self, const StallPolicy& stall, MPI_Comm world,
                   const TwoLevelComms* two_level, bool freeze) {
    *self = this;
    if (!two_level) {
      local_ = std::make_unique<StagedExchange>(world);
      rings_.emplace_back(local_.get(), "the ring's exchange");
    } else {
      place_ = two_level->place;
      local_ = std::make_unique<StagedExchange>(two_level->local);
      cross_ = std::make_unique<StagedExchange>(two_level->cross);
      rings_.emplace_back(local_.get(),
                          str_cat("the two-level ring's exchange inside host ", place_.cross, " (ranks ",
                                  place_.local_ring.front(), " to ", place_.local_ring.back(), ")"),
                          place_.local_ring);
      rings_.emplace_back(cross_.get(), "the two-level ring's exchange across hosts", place_.cross_ring, true,
                          across_hosts_abort_s(stall.abort_s));
      const int L = local_->world(), H = cross_->world();
      // The device collectives' composition, over host stand-ins of their exchanges.
      inside_ = std::make_unique<RingExecutor>(std::make_unique<HostExchangePrimitives>(*local_), Wire::kFp32, 1.0f);
      across_ = std::make_unique<RingExecutor>(std::make_unique<HostExchangePrimitives>(*cross_), Wire::kFp32,
                                               1.0f / static_cast<float>(L * H));
      two_ = std::make_unique<TwoLevelRing>(*inside_, *across_, place_);
    }
    if (!cross_) inside_ = std::make_unique<RingExecutor>(std::make_unique<HostExchangePrimitives>(*local_));
    watch_ = std::make_unique<DeviceWatch>(stall, rings_, finished_when_enqueued());
    if (freeze) freeze_here(false);
    watch_->warm_up(nullptr, [] {});
  }
  ~StagedCollective() override { watch_.reset(); }
  std::string describe() const override { return "a host-staged stand-in of the device collectives"; }
  int after_end() const { return local_->after_end() + (cross_ ? cross_->after_end() : 0); }
  int parked() { return local_->gate().parked() + (cross_ ? cross_->gate().parked() : 0); }

  // The victim freezes: sleeps far beyond any abort time, or stops.
  static void freeze_here(bool stop) {
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::printf("freeze_at=%.3f\n", now);
    std::fflush(stdout);
    if (stop) raise(SIGSTOP);
    std::this_thread::sleep_for(std::chrono::seconds(120));
  }

 protected:
  PhaseSwitch reduce(float* data, int64_t count, const WaitContext& context, const ShardUpdate*) override {
    if (!two_) {
      watch_->run(context, {{0, [&] { inside_->run(data, count, context); }}});
      return std::nullopt;
    }
    std::vector<DeviceWatch::Phase> phases;
    for (RingPhase& p : two_->average(data, count, context, nullptr))
      phases.push_back({static_cast<size_t>(p.ring), std::move(p.run)});
    watch_->run(context, phases);
    return std::nullopt;
  }

 private:
  std::unique_ptr<StagedExchange> local_, cross_;
  TwoLevelPlace place_;
  std::unique_ptr<RingExecutor> inside_, across_;  // the flat ring is inside_
  std::unique_ptr<TwoLevelRing> two_;
  std::vector<DeviceWatch::Ring> rings_;
  std::unique_ptr<DeviceWatch> watch_;
};

int run(int argc, char** argv) {
  const World& w = World::init(&argc, &argv);
  RT_CHECK(argc == 6,
           "usage: device_watch_job flat|two_level none|before_warm_up|before_first_step|mid_run VICTIM "
           "ABORT_S WARN_S");
  const std::string hierarchy = argv[1], mode = argv[2];
  const int victim = std::atoi(argv[3]);
  const bool frozen = mode != "none" && w.rank() == victim;
  std::atomic<StagedCollective*> collective{nullptr};
  const double abort_s = std::atof(argv[4]), warn_s = std::atof(argv[5]);
  StallPolicy stall{warn_s, abort_s, [&](const std::string& m) { stderr_line(w.tag() + "warning: " + m); },
                    [&](const std::string& m) {
                      // Threads that would call into a communicator after the abort get time to.
                      std::this_thread::sleep_for(std::chrono::milliseconds(500));
                      StagedCollective* c = collective.load();
                      stderr_line(str_cat("rank ", w.rank(), ": calls into a communicator after the abort: ",
                                          c ? c->after_end() : -1, ", threads parked: ", c ? c->parked() : -1));
                      w.abort(m);
                    }};
  TwoLevelComms comms;
  if (hierarchy == "two_level") comms = split_two_level(w.comm(), host_layout(w.comm()));
  auto owned = std::make_unique<StagedCollective>(
      &collective, stall, w.comm(), hierarchy == "two_level" ? &comms : nullptr, frozen && mode == "before_warm_up");
  const std::vector<ParamExtent> params = {{0, 1000}, {1024, 7001}, {8192, 5}, {8256, 3000}};
  const int64_t arena_floats = 8256 + 3000;
  std::vector<float> arena(static_cast<size_t>(arena_floats));
  GradReducer reducer(arena.data(), params, plan_buckets(params, 2000, 8000), std::move(owned), /*overlap=*/true,
                      nullptr);
  const int steps = mode == "none" ? 8 : 1000;
  for (int step = 1; step <= steps; ++step) {
    if (frozen && ((mode == "before_first_step" && step == 1) || (mode == "mid_run" && step == 4)))
      StagedCollective::freeze_here(mode == "mid_run");
    for (size_t i = 0; i < arena.size(); ++i) arena[i] = static_cast<float>(w.rank() + 1 + step + i % 7);
    reducer.begin_step(step);
    for (size_t p = 0; p < params.size(); ++p) reducer.on_grad_ready(p);
    reducer.finish();
    const float want = static_cast<float>(w.size() + 1) / 2;
    for (const ParamExtent& p : params)
      for (int64_t i = p.offset; i < p.offset + p.count; ++i)
        RT_CHECK(std::abs(arena[static_cast<size_t>(i)] - (want + static_cast<float>(step + i % 7))) < 1e-3, "step ",
                 step, ": element ", i, " is ", arena[static_cast<size_t>(i)]);
  }
  if (w.rank() == 0) std::printf("device_watch_job: %d steps averaged on %d ranks (%s)\n", steps, w.size(), argv[1]);
  if (hierarchy == "two_level") {
    MPI_Comm_free(&comms.local);
    MPI_Comm_free(&comms.cross);
  }
  return 0;
}

}  // namespace
}  // namespace rt

int main(int argc, char** argv) {
  const int rc = rt::run(argc, argv);
  rt::World::get().finalize();
  return rc;
}
