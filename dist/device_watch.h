// The host side of the collectives on GPU memory (dist/cuda/device_collective.h): the
// communicators they call into, the gate that stops those calls once the job is being aborted,
// and the GPU watchdog's view of each bucket's work (Note [GPU watchdog] in dist/stall_watch.h).
// Plain C++ without CUDA, so that the tests check it without a GPU, over host stand-ins.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dist/stall_watch.h"
#include "dist/transport.h"

namespace rt {

// Stops calls into a communicator once an abort is decided. Each call into it (an NCCL call)
// passes the gate; once the gate is closed, a thread that comes to it parks: it sleeps until the
// process ends (the watchdog's abort follows within StallWatch::kBeforeAbortS), never calling
// NCCL on a communicator that ncclCommAbort has freed, and never reporting the error that the
// aborted call returns. What the gate cannot stop, with NCCL's blocking communicators: a call
// already inside NCCL when ncclCommAbort frees the communicator (the abort is what ends it), and a
// kMayBlock call whose thread was held up more than kEnteringS between passing the gate and
// entering NCCL (close() no longer waits for it). Non-blocking communicators would close that gap.
class CommGate {
 public:
  // kEnqueues: a call that returns at once (ncclGroupStart, ncclSend inside a group).
  // kMayBlock: a call that may wait on peers on the host (ncclGroupEnd and ncclAllReduce connect
  // there), which only the abort that follows close() ends.
  enum class Call { kEnqueues, kMayBlock };
  // A kMayBlock call that started this recently may not have reached NCCL yet: close() waits that
  // long for it (one that has waited longer is blocked inside, where the abort reaches it).
  static constexpr double kEnteringS = 0.1;

  // Runs call() unless the gate is closed, and returns its result. A thread that finds the gate
  // closed, before the call or when it returns, parks.
  template <typename F>
  auto pass(Call kind, F&& call) -> decltype(call()) {
    enter(kind);
    if constexpr (std::is_void_v<decltype(call())>) {
      {
        Leave leave{*this, kind};
        call();
      }
      if (closed()) park();
    } else {
      auto result = [&] {
        Leave leave{*this, kind};
        return call();
      }();
      if (closed()) park();
      return result;
    }
  }
  // For the watchdog's polls, which must not park: runs call() (a kEnqueues call) and returns
  // true unless the gate is closed.
  template <typename F>
  bool attempt(F&& call) {
    running_.fetch_add(1);
    if (closed()) {
      running_.fetch_sub(1);
      return false;
    }
    Leave leave{*this, Call::kEnqueues};
    call();
    return true;
  }
  // No call passes once this returns, and no kEnqueues call is still running; a kMayBlock call
  // may be (it has been inside for kEnteringS at least). Any thread, any number of times.
  void close();
  bool closed() const { return closed_.load(); }
  // Parks the calling thread if the gate is closed.
  void park_if_closed() {
    if (closed()) park();
  }
  // Threads parked at this gate so far.
  int parked() const { return parked_.load(); }

 private:
  struct Leave {
    CommGate& gate;
    Call kind;
    ~Leave() { (kind == Call::kEnqueues ? gate.running_ : gate.blocking_).fetch_sub(1); }
  };
  void enter(Call kind);
  [[noreturn]] void park();

  std::atomic<bool> closed_{false};
  std::atomic<int> running_{0};         // kEnqueues calls (and attempts) in progress
  std::atomic<int> blocking_{0};        // kMayBlock calls in progress
  std::atomic<int64_t> entered_ns_{0};  // when the latest kMayBlock call started (steady clock)
  std::atomic<int> parked_{0};
};

// A communicator of a device collective: NCCL's, or a stand-in in the tests. Every call into it
// passes gate().
class DeviceComm {
 public:
  virtual ~DeviceComm() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual std::string describe() const = 0;
  // Set-up, on the thread that builds the collective: one tiny transfer with each peer its work
  // meets (the ring's neighbours), enqueued on `stream` (a cudaStream_t), so that the connections
  // NCCL makes lazily are made now.
  virtual void warm_up(void* stream) = 0;
  // The watchdog's thread: the communicator's asynchronous error in NCCL's words
  // (ncclCommGetAsyncError), "" while it has none or once the gate is closed.
  virtual std::string async_error() { return ""; }
  // Once an abort is decided (the watchdog's before_abort): closes the gates of all of comms
  // first, then ends the transfers still in flight on each (end_transfers: ncclCommAbort, once per
  // communicator) all at once, one thread each, and returns when all have ended. Not one after
  // another: aborting one communicator may wait for the GPU, which still runs another's kernel,
  // one that only that other's abort ends (the two-level ring's two). Its caller bounds the time
  // (StallWatch::kBeforeAbortS), as an abort may hang.
  static void abort_all(const std::vector<DeviceComm*>& comms);
  bool aborted() const { return gate_.closed(); }
  CommGate& gate() { return gate_; }

 protected:
  virtual void end_transfers() {}

 private:
  CommGate gate_;
  std::atomic<bool> ended_{false};  // end_transfers has been called
};

// How the device ring moves one step's bytes: `send_bytes` from `send` to rank `next` and
// `recv_bytes` into `recv` from rank `prev`, enqueued on `stream` so that neither waits for the
// other. NCCL point-to-point in the trainer. NCCL refuses two ranks on one GPU, so the tests also
// run the ring over a host-staged exchange, to check its steps and kernels at several ranks on
// the one GPU a test machine has.
class DeviceExchange : public DeviceComm {
 public:
  virtual void exchange(const void* send, size_t send_bytes, int next, void* recv, size_t recv_bytes, int prev,
                        void* stream) = 0;
  // The ring's warm-up: 4 bytes from send to the next rank and into recv from the previous one.
  // Nothing at one rank.
  void warm_up_ring(void* send, void* recv, void* stream);
};

// The GPU watchdog over a device collective's work (Note [GPU watchdog]): its communicators (a
// ring's one, the two-level ring's two), each bucket's work as pieces registered before they are
// enqueued, the set-up's warm-up, and the communicators aborted before the job.
class DeviceWatch {
 public:
  struct Ring {
    Ring(DeviceComm* comm_, std::string label_, std::vector<int> world_ranks_ = {}, bool names_neighbours_ = true,
         double abort_s_ = 0)
        : comm(comm_),
          label(std::move(label_)),
          world_ranks(std::move(world_ranks_)),
          names_neighbours(names_neighbours_),
          abort_s(abort_s_) {}
    DeviceComm* comm;
    std::string label;             // "the ring's exchange", "ncclAllReduce"
    std::vector<int> world_ranks;  // the world rank of each of comm's ranks; empty: the same
    bool names_neighbours;         // false: an NCCL collective, which cannot say whom it waits for
    double abort_s;                // above 0: replaces the policy's abort time
  };
  // On the communication thread, after the work of a piece is enqueued: records its end (a CUDA
  // event) and returns what says whether it has finished. bucket is -1 at set-up.
  using Mark = std::function<std::function<bool()>(int bucket, int phase)>;
  // One piece of a bucket's work: the steps enqueued on one ring.
  struct Phase {
    size_t ring;
    std::function<void()> enqueue;
  };

  DeviceWatch(const StallPolicy& policy, std::vector<Ring> rings, Mark mark);
  ~DeviceWatch();  // stops watching

  // On the communication thread: each phase in turn is registered with the watchdog, then
  // enqueued, then marked. Parks once an abort is decided.
  void run(const WaitContext& context, const std::vector<Phase>& phases);
  // Set-up: each ring of more than one rank warms its connections up (DeviceComm::warm_up), a
  // piece of its own, then wait() waits for the GPU (a synchronize). Parks if the watchdog gave up.
  void warm_up(void* stream, const std::function<void()>& wait);
  // Parks the calling thread once an abort is decided.
  void park_if_aborted();
  size_t pending() const { return watch_->pending(); }
  // "the ring's exchange over X, receiving from rank 2 and sending to rank 0" and its blame.
  const std::string& what(size_t ring) const { return what_[ring]; }

 private:
  std::vector<DeviceComm*> communicators() const;

  std::vector<Ring> rings_;
  Mark mark_;
  std::vector<std::string> what_, blame_;
  std::unique_ptr<StallWatch> watch_;
};

}  // namespace rt
