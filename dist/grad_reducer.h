// Averages the gradient arena across ranks bucket by bucket (see Note [Bucket order]), on a
// communication thread that starts each bucket as soon as backward has finished it, so that
// communication overlaps the rest of backward. With overlap off, all buckets run after backward.
//
// Thread contract: the main thread calls begin_step, on_grad_ready (from Graph::backward) and
// finish; MPI is called only by the communication thread between begin_step and finish, and
// only by the main thread outside that window (MPI_THREAD_SERIALIZED).
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dist/bucket_plan.h"
#include "dist/collective.h"
#include "dist/timeline.h"

namespace rt {

class GradReducer {
 public:
  GradReducer(float* grad_arena, std::vector<ParamExtent> params, std::vector<Bucket> buckets,
              std::unique_ptr<Collective> collective, bool overlap, Timeline* timeline);
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  void begin_step(int64_t step);
  // Parameter i (arena order) has its final gradient.
  void on_grad_ready(size_t param);
  // Returns when every bucket is averaged; rethrows a communication error.
  void finish();

  const std::vector<Bucket>& buckets() const { return buckets_; }
  const Collective& collective() const { return *collective_; }

 private:
  void launch_ready_buckets();  // under mu_
  void comm_loop();

  float* arena_;
  std::vector<ParamExtent> params_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_param_;
  std::unique_ptr<Collective> collective_;
  bool overlap_;
  Timeline* timeline_;

  std::mutex mu_;
  std::condition_variable cv_;
  int64_t step_ = 0;
  std::vector<size_t> pending_params_;  // per bucket: parameters not yet ready
  std::vector<double> ready_us_;        // per bucket: when its last gradient arrived
  size_t launched_ = 0, done_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace rt
