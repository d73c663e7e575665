// The GPU watchdog's host side (dist/device_watch.h, Note [GPU watchdog] in dist/stall_watch.h)
// without a GPU, over a stand-in communicator whose calls block, as NCCL's do while it connects to
// a peer that has not come, until the peer answers or the communicator is aborted:
// - CommGate: a call after the gate closes is never made and its thread parks; close() waits for
//   calls that only enqueue, not for one blocked on peers;
// - a bucket blocked before its work is enqueued is warned about and aborted, its thread parks,
//   and nothing reaches the communicator after the abort;
// - the set-up's warm-up exchanges with both neighbours, watched the same way;
// - an asynchronous error aborts at once, in the communicator's words;
// - the ring across hosts waits longer than the ring inside a host;
// - an abort closes every gate first, then aborts the communicators at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "base/check.h"
#include "dist/device_watch.h"

namespace rt {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Waits up to `limit` seconds for ok().
template <typename F>
bool eventually(F ok, double limit = 10) {
  const auto start = Clock::now();
  while (!ok()) {
    if (seconds_since(start) > limit) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// A communicator whose exchanges block until its peers answer (answered) or it is aborted; it
// counts what reaches it after its transfers were ended.
class StandIn final : public DeviceExchange {
 public:
  StandIn(int rank, int world) : rank_(rank), world_(world) {}
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string describe() const override { return "a stand-in"; }
  void warm_up(void* stream) override {
    char send[4] = {}, recv[4] = {};
    warm_up_ring(send, recv, stream);
  }
  void exchange(const void*, size_t send_bytes, int next, void*, size_t recv_bytes, int prev, void*) override {
    gate().pass(CommGate::Call::kMayBlock, [&] {
      reached();
      {
        std::lock_guard<std::mutex> lock(mutex);
        exchanges.push_back(str_cat(send_bytes, " bytes to rank ", next, ", ", recv_bytes, " from rank ", prev));
      }
      while (!answered && !ended) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  }
  std::string async_error() override {
    std::string words;
    gate().attempt([&] {
      reached();
      std::lock_guard<std::mutex> lock(mutex);
      words = error;
    });
    return words;
  }

  std::atomic<bool> answered{false}, ended{false};
  std::atomic<int> after_end{0};  // calls that reached the communicator after end_transfers
  std::mutex mutex;
  std::vector<std::string> exchanges;
  std::string error;
  std::function<void()> on_end;  // runs first in end_transfers, where the test may block it

 protected:
  void end_transfers() override {
    if (on_end) on_end();
    ended = true;
  }

 private:
  void reached() {
    if (ended) ++after_end;
  }
  int rank_, world_;
};

// The watchdog's words and deeds in order, each kind once (until the job would end, the watchdog
// repeats its abort, which a real abort never returns to let it do; this one lets it every 10 ms).
struct Record {
  std::mutex mutex;
  std::vector<std::string> events;
  std::atomic<int> aborts{0};  // counts an abort once first_abort_at holds its time
  Clock::time_point first_abort_at;
  void add(const std::string& e) {
    std::lock_guard<std::mutex> lock(mutex);
    add_locked(e);
  }
  StallPolicy policy(double warn_s, double abort_s) {
    return {warn_s, abort_s, [this](const std::string& m) { add("warn: " + m); },
            [this](const std::string& m) {
              {
                std::lock_guard<std::mutex> lock(mutex);
                if (aborts.load() == 0) first_abort_at = Clock::now();
                add_locked("abort: " + m);
                ++aborts;
              }
              std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }};
  }
  std::vector<std::string> seen() {
    std::lock_guard<std::mutex> lock(mutex);
    return events;
  }
  // When the first abort came; only once aborts > 0.
  Clock::time_point first_abort() {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_GT(aborts.load(), 0);
    return first_abort_at;
  }

 private:
  void add_locked(const std::string& e) {
    for (const std::string& seen : events)
      if (seen.substr(0, 10) == e.substr(0, 10)) return;
    events.push_back(e);
  }
};

// Whether text is exactly pattern (ECMAScript).
bool matches(const std::string& text, const std::string& pattern) {
  return std::regex_match(text, std::regex(pattern));
}

std::string joined(const std::vector<std::string>& events) {
  std::string all;
  for (const std::string& e : events) all += "\n  " + e;
  return all;
}

DeviceWatch::Mark finished_at_once() {
  return [](int, int) { return std::function<bool()>([] { return true; }); };
}

TEST(CommGate, ACallAfterTheGateClosesIsNeverMadeAndItsThreadParks) {
  auto* gate = new CommGate;  // a parked thread keeps it: never freed
  gate->close();
  std::atomic<bool> made{false}, returned{false};
  std::thread([&made, &returned, gate] {
    gate->pass(CommGate::Call::kEnqueues, [&] { made = true; });
    returned = true;
  }).detach();
  EXPECT_TRUE(eventually([&] { return gate->parked() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(made.load());
  EXPECT_FALSE(returned.load());
  int polled = 0;
  EXPECT_FALSE(gate->attempt([&] { ++polled; }));  // the watchdog's polls are refused, not parked
  EXPECT_EQ(polled, 0);
}

TEST(CommGate, CloseWaitsForACallThatOnlyEnqueues) {
  auto* gate = new CommGate;
  auto* release = new std::atomic<bool>{false};  // the parked thread keeps it
  std::atomic<bool> inside{false}, returned{false}, close_returned{false};
  std::thread([&inside, &returned, gate, release] {
    gate->pass(CommGate::Call::kEnqueues, [&] {
      inside = true;
      while (!*release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    returned = true;
  }).detach();
  ASSERT_TRUE(eventually([&] { return inside.load(); }));
  std::thread closing([&] {
    gate->close();  // must not return while the call may still use the communicator
    close_returned = true;
  });
  EXPECT_TRUE(eventually([&] { return gate->closed(); }));
  // However long it is given, close() waits until the call returns.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(close_returned.load());
  *release = true;
  closing.join();
  // The call had passed the gate; once it returns, its thread parks instead of going on.
  EXPECT_TRUE(eventually([&] { return gate->parked() == 1; }));
  EXPECT_FALSE(returned.load());
}

TEST(CommGate, CloseDoesNotWaitForACallBlockedOnPeers) {
  auto* gate = new CommGate;
  auto* release = new std::atomic<bool>{false};  // set by a thread that may outlive the test
  std::atomic<bool> returned{false};
  std::thread([&returned, gate, release] {
    gate->pass(CommGate::Call::kMayBlock, [&] {
      while (!*release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    returned = true;
  }).detach();
  std::this_thread::sleep_for(std::chrono::duration<double>(CommGate::kEnteringS + 0.2));
  // Were close() to wait for the call, it would return only once this releases it.
  std::thread([release] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    *release = true;
  }).detach();
  const auto start = Clock::now();
  gate->close();  // the abort that follows is what ends such a call
  EXPECT_LT(seconds_since(start), 1.0);
  EXPECT_TRUE(eventually([&] { return gate->parked() == 1; }));
  EXPECT_FALSE(returned.load());
}

// The gap the watchdog had: NCCL connects to a peer inside the call that enqueues the first
// exchange with it, and blocks there until the peer comes. The bucket is watched from before the
// call, so a peer frozen before its first exchange is reported and the job aborted; the
// communication thread, freed by the abort, parks instead of calling NCCL again.
TEST(DeviceWatch, ABucketBlockedBeforeItsWorkIsEnqueuedIsAbortedAndItsThreadParks) {
  auto* x = new StandIn(0, 2);  // the parked thread keeps it
  Record record;
  std::atomic<bool> returned{false};
  {
    DeviceWatch watch(record.policy(0.2, 1.0), {DeviceWatch::Ring(x, "the ring's exchange")}, finished_at_once());
    const auto start = Clock::now();
    std::thread([&watch, &returned, x] {
      char send[8], recv[8];
      watch.run(WaitContext{4, 2, ""}, {{0, [&] {
                                           x->exchange(send, 8, 1, recv, 8, 1, nullptr);
                                           x->exchange(send, 8, 1, recv, 8, 1, nullptr);  // the ring's next step
                                         }}});
      returned = true;
    }).detach();
    // The thread parks once the gate closes, which may be before the job's abort comes.
    ASSERT_TRUE(eventually([&] { return record.aborts.load() > 0; }, 20)) << joined(record.seen());
    ASSERT_TRUE(eventually([&] { return x->gate().parked() == 1; })) << joined(record.seen());
    const double aborted_after = std::chrono::duration<double>(record.first_abort() - start).count();
    EXPECT_GE(aborted_after, 1.0);
    EXPECT_LT(aborted_after, 5.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(returned.load());
  EXPECT_EQ(x->after_end.load(), 0) << "calls reached the communicator after it was aborted";
  EXPECT_EQ(x->exchanges.size(), 1u) << "the ring's next step was called after the abort";
  const std::vector<std::string> events = record.seen();
  ASSERT_EQ(events.size(), 3u) << "expected a warning, the abort announced, then the job's abort:" << joined(events);
  EXPECT_TRUE(matches(events[0],
                      "warn: step 4, bucket 2: the ring's exchange over a stand-in, receiving from rank 1 and sending "
                      "to rank 1, still in the call that enqueues it \\(NCCL connects to peers there\\), has waited "
                      "[0-9]+ s \\(dist\\.stall_warn_s = 0\\.2\\)"))
      << events[0];
  EXPECT_EQ(events[1].rfind("warn: aborting the job, its NCCL communicators first: step 4, bucket 2: ", 0), 0u)
      << events[1];
  EXPECT_EQ(events[2].rfind("abort: step 4, bucket 2: the ring's exchange over a stand-in", 0), 0u) << events[2];
  EXPECT_NE(events[2].find("(dist.stall_abort_s = 1): rank 1 is stuck, dead or running a different schedule"),
            std::string::npos)
      << events[2];
  EXPECT_TRUE(x->ended.load());
}

// At set-up each ring exchanges 4 bytes with both of its neighbours, so that NCCL connects there;
// then the set-up waits for the GPU. A ring of one has no neighbours and is skipped.
TEST(DeviceWatch, TheWarmUpExchangesWithBothNeighboursOfEachRing) {
  StandIn inside(0, 3), across(1, 2), alone(0, 1);
  inside.answered = across.answered = true;
  Record record;
  int waits = 0;
  {
    DeviceWatch watch(record.policy(5, 10),
                      {DeviceWatch::Ring(&inside, "inside"), DeviceWatch::Ring(&alone, "alone"),
                       DeviceWatch::Ring(&across, "across")},
                      finished_at_once());
    watch.warm_up(nullptr, [&] { ++waits; });
    EXPECT_TRUE(eventually([&] { return watch.pending() == 0; }));
  }
  EXPECT_EQ(waits, 1);
  EXPECT_EQ(inside.exchanges, std::vector<std::string>{"4 bytes to rank 1, 4 from rank 2"});
  EXPECT_EQ(across.exchanges, std::vector<std::string>{"4 bytes to rank 0, 4 from rank 0"});
  EXPECT_TRUE(alone.exchanges.empty());
  EXPECT_TRUE(record.seen().empty()) << joined(record.seen());
}

// A peer that never comes to the warm-up: reported as the set-up's, and the job aborted; the
// set-up's thread parks before it waits for the GPU.
TEST(DeviceWatch, AWarmUpThatWaitsForAFrozenPeerIsAborted) {
  auto* x = new StandIn(0, 3);
  Record record;
  std::atomic<bool> waited{false};
  {
    DeviceWatch watch(record.policy(0.2, 0.6), {DeviceWatch::Ring(x, "the ring's exchange", {5, 6, 7})},
                      finished_at_once());
    std::thread([&watch, &waited] { watch.warm_up(nullptr, [&] { waited = true; }); }).detach();
    ASSERT_TRUE(eventually([&] { return record.aborts.load() > 0; }, 20)) << joined(record.seen());
    ASSERT_TRUE(eventually([&] { return x->gate().parked() == 1; })) << joined(record.seen());
  }
  EXPECT_FALSE(waited.load());
  EXPECT_EQ(x->after_end.load(), 0);
  const std::vector<std::string> events = record.seen();
  ASSERT_EQ(events.size(), 3u) << joined(events);
  // World ranks: the ring's ranks 0, 1, 2 are the world's 5, 6, 7.
  EXPECT_EQ(events[0].rfind("warn: set-up: the ring's exchange over a stand-in, receiving from rank 7 and sending to "
                            "rank 6, warming up its connections, still in the call",
                            0),
            0u)
      << events[0];
  EXPECT_NE(events[2].find(": rank 7 or rank 6 is stuck, dead or running a different schedule"), std::string::npos)
      << events[2];
}

// The communicator's asynchronous error (a broken link, a dead peer) ends the job at once, long
// before dist.stall_abort_s, in the communicator's own words; nothing asks it again afterwards.
TEST(DeviceWatch, AnAsynchronousErrorAbortsAtOnceInTheCommunicatorsWords) {
  StandIn x(1, 3);
  x.answered = true;
  Record record;
  {
    // The GPU never finishes the bucket: only the error can end the wait.
    DeviceWatch watch(record.policy(30, 60), {DeviceWatch::Ring(&x, "the ring's exchange")},
                      [](int, int) { return std::function<bool()>([] { return false; }); });
    char send[4], recv[4];
    watch.run(WaitContext{5, 1, ""}, {{0, [&] { x.exchange(send, 4, 2, recv, 4, 0, nullptr); }}});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(record.aborts.load(), 0);
    const auto broken = Clock::now();
    {
      std::lock_guard<std::mutex> lock(x.mutex);
      x.error = "remote process exited or there was a network error (NCCL's last warning: socket closed)";
    }
    ASSERT_TRUE(eventually([&] { return record.aborts.load() > 0; }, 5)) << joined(record.seen());
    EXPECT_LT(std::chrono::duration<double>(record.first_abort() - broken).count(), 5.0);  // not 60 s
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(x.after_end.load(), 0) << "the aborted communicator was asked again";
  const std::vector<std::string> events = record.seen();
  ASSERT_EQ(events.size(), 2u) << joined(events);
  EXPECT_EQ(events[1],
            "abort: step 5, bucket 1: the ring's exchange over a stand-in, receiving from rank 0 and sending to rank 2 "
            "failed: NCCL reports an asynchronous error on the ring's exchange: remote process exited or there was a "
            "network error (NCCL's last warning: socket closed)");
  EXPECT_TRUE(x.ended.load());
}

// The two-level ring's rings as two of its ranks see them when a rank of host 1 freezes: host 1's
// other rank waits inside its host, a rank of host 0 waits across hosts, both from the same
// moment. The ring across hosts waits longer, so the rank that can name the frozen one reports
// first.
TEST(DeviceWatch, TheRingAcrossHostsWaitsLongerThanTheRingInsideAHost) {
  EXPECT_EQ(across_hosts_abort_s(2), 4);
  EXPECT_EQ(across_hosts_abort_s(300), 330);
  auto* inside = new StandIn(0, 2);  // rank 2 of world 4, first in host 1's ring {2, 3}
  auto* across = new StandIn(0, 2);  // rank 1 of world 4, first in the ring across hosts {1, 3}
  auto* spare1 = new StandIn(1, 2);  // rank 2 across hosts, in {0, 2}: its peer answers
  auto* spare0 = new StandIn(1, 2);  // rank 1 inside host 0, in {0, 1}: its peer answers
  spare1->answered = spare0->answered = true;
  Record host1, host0;
  {
    DeviceWatch on_host1(
        host1.policy(0.5, 2),
        {DeviceWatch::Ring(inside, "the exchange inside host 1", {2, 3}),
         DeviceWatch::Ring(spare1, "the exchange across hosts", {0, 2}, true, across_hosts_abort_s(2))},
        finished_at_once());
    DeviceWatch on_host0(
        host0.policy(0.5, 2),
        {DeviceWatch::Ring(spare0, "the exchange inside host 0", {0, 1}),
         DeviceWatch::Ring(across, "the exchange across hosts", {1, 3}, true, across_hosts_abort_s(2))},
        finished_at_once());
    const auto start = Clock::now();
    char send[4], recv[4];
    auto bucket = [&](DeviceWatch* watch, StandIn* local, StandIn* cross) {
      return std::thread([=, &send, &recv] {
        watch->run(WaitContext{9, 0, ""}, {{0, [&] { local->exchange(send, 4, 0, recv, 4, 0, nullptr); }},
                                           {1, [&] { cross->exchange(send, 4, 0, recv, 4, 0, nullptr); }}});
      });
    };
    bucket(&on_host1, inside, spare1).detach();
    bucket(&on_host0, spare0, across).detach();
    // Inside a host after 2 s, across hosts after 4 s; each bound twice that.
    ASSERT_TRUE(eventually([&] { return host0.aborts.load() > 0; }, 20)) << joined(host0.seen());
    ASSERT_GT(host1.aborts.load(), 0);
    const double inside_s = std::chrono::duration<double>(host1.first_abort() - start).count();
    const double across_s = std::chrono::duration<double>(host0.first_abort() - start).count();
    EXPECT_GE(inside_s, 2.0);
    EXPECT_LT(inside_s, 4.0);
    EXPECT_GE(across_s, 4.0);
    EXPECT_LT(across_s, 8.0);
  }
  const std::vector<std::string> first = host1.seen();
  ASSERT_EQ(first.size(), 3u) << joined(first);
  EXPECT_NE(first[2].find("the exchange inside host 1 over a stand-in, receiving from rank 3 and sending to rank 3"),
            std::string::npos)
      << first[2];
  EXPECT_NE(first[2].find(": rank 3 is stuck, dead"), std::string::npos) << first[2];
  const std::vector<std::string> later = host0.seen();
  ASSERT_EQ(later.size(), 3u) << joined(later);
  EXPECT_TRUE(matches(later[2],
                      ".*the exchange across hosts over a stand-in, receiving from rank 3 and sending to rank 3, still "
                      "in the call that enqueues it \\(NCCL connects to peers there\\), has waited [0-9]+ s "
                      "\\(dist\\.stall_abort_s = 4\\).*"))
      << later[2];
}

// The two-level ring's abort: ncclCommAbort of one communicator may wait for the GPU, which still
// runs the other's kernel until that one is aborted too. Every gate closes first, then the
// communicators are aborted at once: the second one's abort runs even while the first one's
// blocks, and the job's abort follows once both have returned.
TEST(DeviceWatch, EveryGateClosesFirstThenTheCommunicatorsAreAbortedAtOnce) {
  auto* local = new StandIn(0, 2);  // the parked thread keeps them
  auto* cross = new StandIn(0, 2);
  local->answered = true;  // the bucket waits across hosts
  struct Seen {
    std::atomic<bool> release{false};  // lets the local abort return
    std::atomic<bool> local_ending{false};
    std::atomic<int> gates_open_at_an_end{0};
  };
  auto seen = std::make_shared<Seen>();  // the communicators' aborts keep it
  struct Release {
    std::shared_ptr<Seen> seen;
    ~Release() { seen->release = true; }  // whatever the test's outcome
  } release{seen};
  local->on_end = [seen, local, cross] {
    if (!local->aborted() || !cross->aborted()) ++seen->gates_open_at_an_end;
    seen->local_ending = true;
    while (!seen->release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  cross->on_end = [seen, local, cross] {
    if (!local->aborted() || !cross->aborted()) ++seen->gates_open_at_an_end;
  };
  Record record;
  {
    DeviceWatch watch(record.policy(0.2, 0.5), {DeviceWatch::Ring(local, "inside"), DeviceWatch::Ring(cross, "across")},
                      finished_at_once());
    std::thread([&watch, local, cross] {
      char send[4], recv[4];
      watch.run(WaitContext{3, 0, ""}, {{0, [&] { local->exchange(send, 4, 1, recv, 4, 1, nullptr); }},
                                        {1, [&] { cross->exchange(send, 4, 1, recv, 4, 1, nullptr); }}});
    }).detach();
    ASSERT_TRUE(eventually([&] { return seen->local_ending.load(); }, 20)) << joined(record.seen());
    ASSERT_TRUE(eventually([&] { return cross->ended.load(); }))
        << "the communicator across hosts was not aborted while the one inside the host was being aborted";
    EXPECT_FALSE(local->ended.load());
    EXPECT_EQ(record.aborts.load(), 0) << "the job was aborted before its communicators";
    seen->release = true;
    ASSERT_TRUE(eventually([&] { return record.aborts.load() > 0; }, 20)) << joined(record.seen());
    EXPECT_TRUE(local->ended.load());
    // Freed by the abort, the bucket's thread parks instead of going on.
    EXPECT_TRUE(eventually([&] { return cross->gate().parked() == 1; }));
  }
  EXPECT_EQ(seen->gates_open_at_an_end.load(), 0) << "a communicator was aborted before every gate was closed";
  EXPECT_EQ(local->after_end.load() + cross->after_end.load(), 0);
  EXPECT_EQ(local->exchanges.size(), 1u);
  EXPECT_EQ(cross->exchanges.size(), 1u);
}

}  // namespace
}  // namespace rt
