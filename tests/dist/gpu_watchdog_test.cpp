// The GPU watchdog (Note [GPU watchdog], dist/stall_watch.h) without a GPU: the work it watches
// is a host-staged exchange, a receive from the previous rank posted with MPI_Irecv, and that
// peer never answers until every rank's watchdog has given up. The watchdog must warn naming
// step, bucket and the peer, then end the transfers in flight (ncclCommAbort in the trainer; a
// stand-in here) before it aborts the job (a stand-in that records, then lets the peer answer so
// the test can end).
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/check.h"
#include "dist/stall_watch.h"
#include "dist/world.h"

namespace rt {
namespace {

TEST(GpuWatchdog, APeerThatNeverAnswersIsNamedThenTheCommunicatorsAbortedThenTheJob) {
  const World& w = World::get();
  if (w.size() < 2) GTEST_SKIP() << "needs a peer";
  const int prev = (w.rank() + w.size() - 1) % w.size(), next = (w.rank() + 1) % w.size();
  int from_prev = -1;
  const int to_next = w.rank();
  MPI_Request receive;
  MPI_Irecv(&from_prev, 1, MPI_INT, prev, 71, w.comm(), &receive);

  // The first of each kind, in the order they happened (until the peer answers, the watchdog
  // repeats its abort at every poll, as a real abort never returns to let it). Kinds are told
  // apart by their first 10 characters.
  std::mutex mutex;
  std::vector<std::string> events;
  auto record = [&](std::string e) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const std::string& seen : events)
      if (seen.substr(0, 10) == e.substr(0, 10)) return false;
    events.push_back(std::move(e));
    return true;
  };
  std::atomic<bool> answered{false};
  StallPolicy policy{0.5, 2.5, [&](const std::string& m) { record("warn: " + m); },
                     [&](const std::string& m) {
                       // The job would end here. Instead, once every rank's watchdog has got this
                       // far, each answers its successor, so that every receive completes and the
                       // test can end.
                       if (!record("abort: " + m)) return;
                       MPI_Barrier(w.comm());
                       MPI_Send(&to_next, 1, MPI_INT, next, 71, w.comm());
                     }};
  {
    StallWatch watch(policy, [&] { record("communicators aborted"); });
    watch
        .watch("step 7, bucket 3",
               str_cat("the ring's exchange, receiving from rank ", prev, " and sending to rank ", next),
               str_cat(": rank ", prev, " or rank ", next, " is stuck, dead or running a different schedule"))
        ->enqueued([&] {
          int done = 0;
          MPI_Test(&receive, &done, MPI_STATUS_IGNORE);  // only the watchdog calls MPI meanwhile
          if (done) answered = true;
          return done != 0;
        });
    const auto start = std::chrono::steady_clock::now();
    while (watch.pending() > 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(20))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(watch.pending(), 0u) << "the watched exchange never completed";
  }
  EXPECT_TRUE(answered.load());
  EXPECT_EQ(from_prev, prev);

  std::lock_guard<std::mutex> lock(mutex);
  std::string seen;
  for (const std::string& e : events) seen += "\n  " + e;
  ASSERT_EQ(events.size(), 4u) << "rank " << w.rank() << ": expected one warning, the abort announced, the "
                               << "communicators aborted, then the job; saw:" << seen;
  EXPECT_EQ(events[0].rfind("warn: step 7, bucket 3: the ring's exchange, receiving from rank ", 0), 0u) << events[0];
  EXPECT_NE(events[0].find(str_cat("from rank ", prev)), std::string::npos) << events[0];
  EXPECT_NE(events[0].find("on the GPU has waited"), std::string::npos) << events[0];
  EXPECT_NE(events[0].find("dist.stall_warn_s = 0.5"), std::string::npos) << events[0];
  // Said before the communicators are touched: ncclCommAbort may hang, and the user must know why.
  EXPECT_EQ(events[1].rfind("warn: aborting the job, its NCCL communicators first: step 7, bucket 3: ", 0), 0u)
      << events[1];
  EXPECT_EQ(events[2], "communicators aborted");
  EXPECT_EQ(events[3].rfind("abort: step 7, bucket 3: ", 0), 0u) << events[3];
  EXPECT_NE(events[3].find("dist.stall_abort_s = 2.5"), std::string::npos) << events[3];
  EXPECT_NE(events[3].find(str_cat(": rank ", prev, " or rank ", next, " is stuck")), std::string::npos) << events[3];
  MPI_Barrier(w.comm());
}

// Work that finishes leaves the queue without a word; the watchdog stops with work still pending.
TEST(GpuWatchdog, FinishedWorkIsForgottenQuietly) {
  std::atomic<int> said{0};
  StallPolicy policy{2, 60, [&](const std::string&) { ++said; }, [&](const std::string&) { ++said; }};
  std::atomic<bool> first{false};
  {
    StallWatch watch(policy, [&] { ++said; });
    watch.watch("step 1, bucket 0", "first", "")->enqueued([&] { return first.load(); });
    watch.watch("step 1, bucket 1", "second", "")->enqueued([] { return true; });
    EXPECT_EQ(watch.pending(), 2u);
    first = true;
    const auto start = std::chrono::steady_clock::now();
    while (watch.pending() > 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(10))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(watch.pending(), 0u);
    watch.watch("step 2, bucket 0", "never", "")->enqueued([] { return false; });
  }  // destroyed while "never" is pending: no hang, no abort
  EXPECT_EQ(said.load(), 0);
}

}  // namespace
}  // namespace rt
