#include "dist/stall_watch.h"

#include <chrono>
#include <future>
#include <memory>
#include <utility>

#include "base/check.h"

namespace rt {

StallWatch::StallWatch(StallPolicy policy, std::function<void()> before_abort) : policy_(std::move(policy)) {
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

void StallWatch::watch(std::function<bool()> done, const WaitContext& context, std::string what, std::string blame) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(Work{std::move(done), context, std::move(what), std::move(blame)});
  }
  wake_.notify_all();
}

size_t StallWatch::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void StallWatch::run() {
  for (;;) {
    Work work;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      work = queue_.front();  // stays queued, so pending() counts it, until it is seen done
    }
    bool stopped = false;
    wait_until(
        [&] {
          if (work.done()) return PollResult::kDone;
          std::lock_guard<std::mutex> lock(mutex_);
          stopped = stop_;
          return stopped ? PollResult::kDone : PollResult::kIdle;
        },
        policy_,
        [&](double waited) {
          return str_cat("step ", work.context.step, ", bucket ", work.context.bucket, ": ", work.what,
                         " on the GPU has waited ", static_cast<int>(waited), " s");
        },
        [&] { return work.blame; });
    if (stopped) return;
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.pop_front();
  }
}

}  // namespace rt
