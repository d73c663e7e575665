// Averages the gradient arena across ranks bucket by bucket (see Note [Bucket order]), on a
// communication thread that starts each bucket as soon as backward has finished it, so that
// communication overlaps the rest of backward. With overlap off, all buckets run after backward.
// Given an update (the optimizer as a ShardUpdate over the whole arena: apply(offset, count)
// updates parameters [offset, offset + count) from the averaged gradients at the same offsets,
// gather is the parameter arena), it also runs it on each bucket, on the part this rank finished
// averaging (Note [Sharded update]), so that finish() returns with the parameters updated.
// Otherwise each bucket is averaged by its gradient hook (Note [Gradient hooks] in
// dist/grad_hook.h): the plain average by default, or a compression's.
//
// Thread contract: the main thread calls begin_step, on_grad_ready (from Graph::backward) and
// finish; MPI is called only by the communication thread between begin_step and finish, and
// only by the main thread outside that window (MPI_THREAD_SERIALIZED).
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/bucket_caps.h"
#include "dist/bucket_plan.h"
#include "dist/collective.h"
#include "dist/grad_hook.h"
#include "dist/timeline.h"

namespace rt {

class GradReducer {
 public:
  GradReducer(float* grad_arena, std::vector<ParamExtent> params, std::vector<Bucket> buckets,
              std::unique_ptr<Collective> collective, bool overlap, Timeline* timeline,
              std::optional<ShardUpdate> update = std::nullopt, std::unique_ptr<GradHook> hook = nullptr,
              BucketCaps caps = {});
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  void begin_step(int64_t step);
  // Parameter i (arena order) has its final gradient.
  void on_grad_ready(size_t param);
  // Returns when every bucket is averaged (and, with an update, applied); rethrows a
  // communication error. Waits without a time limit: every wait of the communication thread is
  // watched (the transports' stall policy on the CPU, the GPU watchdog on the GPU), and once the
  // watchdog decides to abort, the communication thread parks (CommGate in
  // dist/device_watch.h), so this thread waits here until the process ends.
  void finish();
  // Whether finish() leaves the parameters updated (an update was given).
  bool updates_parameters() const { return update_.has_value(); }
  // Shares optimizer state kept at the parameters' offsets (momentum) from the rank that updated
  // each part to all (Collective::gather_updated). Main thread, outside a step; every rank calls it.
  void gather_updated(float* state_arena);

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // The caps its maker cut the buckets at (dist.bucket_mb, dist.first_bucket_mb), for reports.
  const BucketCaps& caps() const { return caps_; }
  // How long each bucket's average took in the last step, its start to its end on the
  // communication thread (on the host: on the GPU it is the time to enqueue it). After finish().
  const std::vector<double>& bucket_seconds() const { return bucket_seconds_; }
  const Collective& collective() const { return *collective_; }
  // Stops the communication thread and hands back the collective, for a reducer over other
  // buckets (Trainer::use_bucket_caps). Main thread, outside a step; the reducer is unusable after.
  std::unique_ptr<Collective> release_collective();
  // The hook that averages each bucket: the one given (a compression's, whose state a test reads),
  // else PlainAverage.
  GradHook& hook() { return *hook_; }
  const GradHook& hook() const { return *hook_; }

 private:
  void launch_ready_buckets();  // under mu_
  // update with the timeline's spans around its work.
  ShardUpdate timed(ShardUpdate update);
  void comm_loop();
  void stop_thread();

  float* arena_;
  std::vector<ParamExtent> params_;
  std::vector<Bucket> buckets_;
  BucketCaps caps_;
  std::vector<size_t> bucket_of_param_;
  std::unique_ptr<Collective> collective_;
  bool overlap_;
  Timeline* timeline_;
  int64_t timeline_bucket_ = 0;        // the communication thread's bucket, for timed()'s spans
  std::optional<ShardUpdate> update_;  // over the whole arena: gather is the parameter arena
  std::unique_ptr<GradHook> hook_;     // a given one never with update_

  std::mutex mu_;
  std::condition_variable cv_;
  int64_t step_ = 0;
  std::vector<size_t> pending_params_;  // per bucket: parameters not yet ready
  std::vector<double> ready_us_;        // per bucket: when its last gradient arrived
  std::vector<double> bucket_seconds_;  // per bucket: its last average's seconds
  size_t launched_ = 0, done_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace rt
