#include "dist/device_watch.h"

#include <thread>

#include "base/check.h"
#include "dist/ring_schedule.h"

namespace rt {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void CommGate::enter(Call kind) {
  // Counted before closed_ is read, as close() sets closed_ before it reads the counts: of any
  // call and a close, either the call sees the gate closed or close() sees the call.
  if (kind == Call::kEnqueues) {
    running_.fetch_add(1);
  } else {
    entered_ns_.store(now_ns());
    blocking_.fetch_add(1);
  }
  if (closed()) {
    (kind == Call::kEnqueues ? running_ : blocking_).fetch_sub(1);
    park();
  }
}

void CommGate::close() {
  closed_.store(true);
  const auto entering = static_cast<int64_t>(kEnteringS * 1e9);
  while (running_.load() > 0 || (blocking_.load() > 0 && now_ns() - entered_ns_.load() < entering))
    std::this_thread::sleep_for(std::chrono::microseconds(50));
}

void CommGate::park() {
  parked_.fetch_add(1);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

void DeviceComm::abort_all(const std::vector<DeviceComm*>& comms) {
  for (DeviceComm* comm : comms) comm->gate_.close();
  std::vector<std::thread> ending;
  for (DeviceComm* comm : comms)
    if (!comm->ended_.exchange(true)) ending.emplace_back([comm] { comm->end_transfers(); });
  for (std::thread& t : ending) t.join();
}

void DeviceExchange::warm_up_ring(void* send, void* recv, void* stream) {
  const int n = world(), r = rank();
  if (n > 1) exchange(send, 4, ring_next(r, n), recv, 4, ring_prev(r, n), stream);
}

DeviceWatch::DeviceWatch(const StallPolicy& policy, std::vector<Ring> rings, Mark mark)
    : rings_(std::move(rings)), mark_(std::move(mark)) {
  for (const Ring& ring : rings_) {
    const int n = ring.comm->world(), r = ring.comm->rank();
    auto world_rank = [&](int rank) {
      return ring.world_ranks.empty() ? rank : ring.world_ranks.at(static_cast<size_t>(rank));
    };
    const int prev = world_rank(ring_prev(r, n)), next = world_rank(ring_next(r, n));
    if (!ring.names_neighbours) {
      what_.push_back(ring.label);
      blame_.push_back(": a rank is stuck, dead or running a different schedule (NCCL does not say which)");
    } else {
      what_.push_back(str_cat(ring.label, " over ", ring.comm->describe(), ", receiving from rank ", prev,
                              " and sending to rank ", next));
      blame_.push_back(prev == next ? blame_rank(policy, prev)
                                    : str_cat(": ", policy.who(prev), " or ", policy.who(next),
                                              " is stuck, dead or running a different schedule"));
    }
  }
  watch_ = std::make_unique<StallWatch>(
      policy,
      // Runs in a thread of its own, which may outlive this object in a test: it keeps the
      // communicators, not this.
      [comms = communicators()] { DeviceComm::abort_all(comms); },
      [this]() -> std::string {
        for (const Ring& ring : rings_) {
          const std::string error = ring.comm->async_error();
          if (!error.empty()) return str_cat("NCCL reports an asynchronous error on ", ring.label, ": ", error);
        }
        return "";
      });
}

DeviceWatch::~DeviceWatch() { watch_.reset(); }

std::vector<DeviceComm*> DeviceWatch::communicators() const {
  std::vector<DeviceComm*> comms;
  for (const Ring& ring : rings_) comms.push_back(ring.comm);
  return comms;
}

void DeviceWatch::park_if_aborted() {
  for (const Ring& ring : rings_) ring.comm->gate().park_if_closed();
}

void DeviceWatch::run(const WaitContext& context, const std::vector<Phase>& phases) {
  park_if_aborted();
  // Bucket -1: work that belongs to no bucket (the batch-norm group's).
  const std::string where = context.bucket >= 0 ? str_cat("step ", context.step, ", bucket ", context.bucket)
                                                : str_cat("step ", context.step);
  for (size_t i = 0; i < phases.size(); ++i) {
    const size_t r = phases[i].ring;
    const auto piece = watch_->watch(where, what_[r], blame_[r], rings_[r].abort_s);
    phases[i].enqueue();
    piece->enqueued(mark_(context.bucket, static_cast<int>(i)));
  }
}

void DeviceWatch::warm_up(void* stream, const std::function<void()>& wait) {
  park_if_aborted();
  for (size_t r = 0; r < rings_.size(); ++r) {
    if (rings_[r].comm->world() == 1) continue;
    const auto piece =
        watch_->watch("set-up", str_cat(what_[r], ", warming up its connections"), blame_[r], rings_[r].abort_s);
    rings_[r].comm->warm_up(stream);
    piece->enqueued(mark_(-1, static_cast<int>(r)));
  }
  wait();
  park_if_aborted();
}

}  // namespace rt
