// Note [GPU watchdog]: a collective on the GPU only enqueues its work (Note [Device collectives]),
// so no host thread of ours ever waits on a peer: a frozen NCCL peer stalls the GPU's streams,
// and the host then blocks forever inside whichever CUDA call next waits for the GPU. StallWatch
// waits in its own thread, on each piece of enqueued work in turn, with the CPU ring's stall
// policy (dist.stall_warn_s, dist.stall_abort_s): past the warning time it names step, bucket
// and the peers waited for; past the abort time it says so, runs before_abort (which aborts the
// NCCL communicators, so no call stays blocked in them; given at most kBeforeAbortS) and then the
// policy's abort. A piece's time counts from when it reaches the head of the queue, so work
// waiting behind a slow bucket is not charged for it; the GPU's wait for the bucket's gradients
// is (at most the rest of backward, far below any sensible dist.stall_warn_s).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "dist/stall_wait.h"
#include "dist/transport.h"

namespace rt {

class StallWatch {
 public:
  static constexpr double kBeforeAbortS = 10;

  StallWatch(StallPolicy policy, std::function<void()> before_abort);
  // Stops watching; work still pending is not waited for.
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  // Watches one piece of enqueued work: done() says whether it has finished (cudaEventQuery on
  // an event recorded after it); what names it and its peers ("the ring's exchange, receiving
  // from rank 2 and sending to rank 0"); blame ends the abort message.
  void watch(std::function<bool()> done, const WaitContext& context, std::string what, std::string blame);
  // Pieces not yet seen to finish.
  size_t pending() const;

 private:
  struct Work {
    std::function<bool()> done;
    WaitContext context;
    std::string what, blame;
  };
  void run();

  StallPolicy policy_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Work> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace rt
