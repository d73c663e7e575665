#include "dist/stall_watch.h"

#include <chrono>
#include <future>
#include <utility>

#include "base/check.h"

namespace rt {

void StallWatch::Piece::enqueued(std::function<bool()> is_done) {
  RT_ASSERT(!enqueued_.load());
  done = std::move(is_done);
  enqueued_.store(true, std::memory_order_release);
}

StallWatch::StallWatch(StallPolicy policy, std::function<void()> before_abort, std::function<std::string()> failure)
    : policy_(std::move(policy)), failure_(std::move(failure)) {
  // The watcher only polls: sleeping between polls leaves the cores to the host's own threads.
  policy_.idle = StallPolicy::Idle::kSleep;
  // The message first: ncclCommAbort can itself hang (NVIDIA/nccl#992 and NVIDIA/nccl#1013), and the user
  // must learn why the job ends even then. It gets kBeforeAbortS, then the job ends regardless.
  policy_.abort = [warn = policy_.warn, abort = policy_.abort,
                   before_abort = std::move(before_abort)](const std::string& m) {
    warn(str_cat("aborting the job, its NCCL communicators first: ", m));
    if (before_abort) {
      auto finished = std::make_shared<std::promise<void>>();
      std::future<void> done = finished->get_future();
      std::thread([before_abort, finished] {
        before_abort();
        finished->set_value();
      }).detach();  // the process ends right after; a hung abort must not hold it
      done.wait_for(std::chrono::duration<double>(kBeforeAbortS));
    }
    abort(m);
  };
  thread_ = std::thread([this] { run(); });
}

StallWatch::~StallWatch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::shared_ptr<StallWatch::Piece> StallWatch::watch(std::string where, std::string what, std::string blame,
                                                     double abort_s) {
  auto piece = std::make_shared<Piece>();
  piece->where = std::move(where);
  piece->what = std::move(what);
  piece->blame = std::move(blame);
  piece->abort_s = abort_s;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(piece);
  }
  wake_.notify_all();
  return piece;
}

size_t StallWatch::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void StallWatch::run() {
  for (;;) {
    std::shared_ptr<Piece> piece;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      piece = queue_.front();  // stays queued, so pending() counts it, until it is seen done
    }
    StallPolicy policy = policy_;
    if (piece->abort_s > 0) policy.abort_s = piece->abort_s;
    bool stopped = false;
    std::string failed;
    wait_until(
        [&] {
          if (piece->enqueued_.load(std::memory_order_acquire) && piece->done()) return PollResult::kDone;
          if (failure_ && !failure_reported_) failed = failure_();
          if (!failed.empty()) return PollResult::kDone;
          std::lock_guard<std::mutex> lock(mutex_);
          stopped = stop_;
          return stopped ? PollResult::kDone : PollResult::kIdle;
        },
        policy,
        [&](double waited) {
          // Not yet enqueued: the communication thread is still inside the call, which is where
          // NCCL connects to peers it has not met.
          const bool on_gpu = piece->enqueued_.load(std::memory_order_acquire);
          return str_cat(
              piece->where, ": ", piece->what,
              on_gpu ? " on the GPU" : ", still in the call that enqueues it (NCCL connects to peers there),",
              " has waited ", static_cast<int>(waited), " s");
        },
        [&] { return piece->blame; });
    if (stopped) return;
    if (!failed.empty()) {
      // Does not return, except for a test's stand-in: the piece is then watched on, and the
      // failure, reported, not asked again.
      failure_reported_ = true;
      policy.abort(str_cat(piece->where, ": ", piece->what, " failed: ", failed));
      continue;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.pop_front();
  }
}

}  // namespace rt
