// Note [GPU watchdog]: a collective on the GPU only enqueues its work (Note [Device collectives]),
// so no host thread of ours waits on a peer there: a frozen NCCL peer stalls the GPU's streams,
// and the host then blocks forever inside whichever CUDA call next waits for the GPU. Except at
// the start: NCCL connects to a peer lazily, inside the first call that needs it, and that call
// blocks on the host until the peer makes its own. StallWatch waits in its own thread, on each
// piece of work in turn, with the CPU ring's stall policy (dist.stall_warn_s, dist.stall_abort_s):
//
// - A piece is registered before any of its work is enqueued (watch()), and counts as finished
//   only once the communication thread has said it is all enqueued and its done() says so. So a
//   call that blocks in NCCL's connect is timed like a transfer on the GPU. The device collectives
//   also make those connections at set-up, one tiny exchange with each neighbour on each
//   communicator, watched as pieces of their own (DeviceWatch::warm_up in dist/device_watch.h).
// - A piece's time counts from when it reaches the head of the queue, so work waiting behind a
//   slow piece is not charged for it; the GPU's wait for the bucket's gradients is (at most the
//   rest of backward, far below any sensible dist.stall_warn_s). A piece may have an abort time
//   of its own: the two-level ring's phase across hosts waits longer than those inside a host
//   (across_hosts_abort_s), as on the CPU, so that the host with the stuck rank reports first.
// - Past the warning time it names step, bucket and the peers waited for. Past the abort time it
//   says so, runs before_abort (given at most kBeforeAbortS), then the policy's abort.
//   before_abort closes the communicators' gates (CommGate in dist/device_watch.h), so that no
//   thread calls into a communicator again (whoever tries parks there, until the process ends;
//   CommGate says what a gate cannot stop), and then aborts them all at once (ncclCommAbort, a
//   thread each: DeviceComm::abort_all), which ends any NCCL call still blocked.
// - With every poll it also asks failure(): the communicators' asynchronous errors
//   (ncclCommGetAsyncError). A broken link or a dead peer is reported at once, in NCCL's words,
//   and the job aborted the same way, instead of after dist.stall_abort_s.
//
// NCCL cannot say which peer a stalled transfer waits for: a piece names the ring neighbours of
// its rank, and a frozen rank's neighbours, which wait on it directly, usually stall first. On a
// flat ring of more than 3 ranks the first rank to give up may be one whose neighbours are both
// healthy (it waits on a neighbour that waits on the frozen rank). Set-up itself
// (ncclCommInitRank, and the MPI calls that precede it) is not watched, as on the CPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "dist/stall_wait.h"
#include "dist/transport.h"

namespace rt {

class StallWatch {
 public:
  static constexpr double kBeforeAbortS = 10;

  // One piece of work, registered before any of it is enqueued.
  class Piece {
   public:
    // The communication thread has enqueued all of the piece's work; done() says whether it has
    // finished (cudaEventQuery on an event recorded after it). Called once.
    void enqueued(std::function<bool()> done);

   private:
    friend class StallWatch;
    std::string where, what, blame;
    double abort_s = 0;
    std::function<bool()> done;  // written before enqueued_ is set, never after
    std::atomic<bool> enqueued_{false};
  };

  // failure(): what has broken, in the words of whoever saw it (NCCL's asynchronous error); ""
  // while nothing has. Absent: nothing is asked.
  StallWatch(StallPolicy policy, std::function<void()> before_abort, std::function<std::string()> failure = {});
  // Stops watching; work still pending is not waited for.
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  // Registers a piece: where says when ("step 7, bucket 3"); what names the work and its peers
  // ("the ring's exchange over NCCL point-to-point, receiving from rank 2 and sending to rank
  // 0"); blame ends the abort message; abort_s replaces the policy's abort time where above 0.
  std::shared_ptr<Piece> watch(std::string where, std::string what, std::string blame, double abort_s = 0);
  // Pieces not yet seen to finish.
  size_t pending() const;

 private:
  void run();

  StallPolicy policy_;
  std::function<std::string()> failure_;
  bool failure_reported_ = false;  // the watcher's thread only
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Piece>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace rt
