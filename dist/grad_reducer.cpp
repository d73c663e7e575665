#include "dist/grad_reducer.h"

#include <algorithm>
#include <chrono>

#include "base/check.h"
#include "base/test_fault.h"
#include "dist/world.h"

namespace rt {

GradReducer::GradReducer(float* grad_arena, std::vector<ParamExtent> params, std::vector<Bucket> buckets,
                         std::unique_ptr<Collective> collective, bool overlap, Timeline* timeline,
                         std::optional<ShardUpdate> update, std::unique_ptr<GradHook> hook, BucketCaps caps)
    : arena_(grad_arena),
      params_(std::move(params)),
      buckets_(std::move(buckets)),
      caps_(caps),
      collective_(std::move(collective)),
      overlap_(overlap),
      timeline_(timeline),
      update_(std::move(update)),
      hook_(std::move(hook)) {
  RT_CHECK(!(update_ && hook_), "a gradient hook's average cannot carry a sharded update");
  bucket_of_param_.resize(params_.size());
  for (size_t b = 0; b < buckets_.size(); ++b)
    for (size_t p = buckets_[b].first_param; p < buckets_[b].end_param; ++p) bucket_of_param_[p] = b;
  pending_params_.resize(buckets_.size());
  ready_us_.resize(buckets_.size());
  bucket_seconds_.resize(buckets_.size());
  int64_t largest = 0;
  for (const Bucket& b : buckets_) largest = std::max(largest, b.count);
  if (StreamOrder* order = collective_->stream_order()) order->prepare(buckets_.size(), largest);
  if (update_ && timeline_) update_ = timed(*update_);
  if (!hook_) {
    int64_t floats = 0;
    for (const Bucket& b : buckets_) floats += b.count;
    hook_ = std::make_unique<PlainAverage>(floats);
  }
  thread_ = std::thread([this] { comm_loop(); });
}

GradReducer::~GradReducer() { stop_thread(); }

void GradReducer::stop_thread() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::unique_ptr<Collective> GradReducer::release_collective() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    RT_ASSERT(launched_ == done_);
  }
  stop_thread();
  return std::move(collective_);
}

void GradReducer::begin_step(int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  RT_ASSERT(launched_ == done_);
  step_ = step;
  launched_ = done_ = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) pending_params_[b] = buckets_[b].end_param - buckets_[b].first_param;
}

void GradReducer::on_grad_ready(size_t param) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t b = bucket_of_param_.at(param);
  RT_ASSERT(pending_params_[b] > 0);
  if (--pending_params_[b] == 0) {
    ready_us_[b] = timeline_ ? timeline_->now_us() : 0;
    if (StreamOrder* order = collective_->stream_order()) order->mark_ready(static_cast<int>(b));
  }
  if (overlap_) launch_ready_buckets();
}

void GradReducer::launch_ready_buckets() {
  const size_t before = launched_;
  while (launched_ < buckets_.size() && pending_params_[launched_] == 0) ++launched_;
  if (launched_ != before) cv_.notify_all();
}

void GradReducer::finish() {
  std::unique_lock<std::mutex> lock(mu_);
  launch_ready_buckets();
  RT_ASSERT(launched_ == buckets_.size());  // every gradient was reported
  cv_.wait(lock, [&] { return done_ == buckets_.size() || error_; });
  if (error_) std::rethrow_exception(error_);
  if (StreamOrder* order = collective_->stream_order()) order->join_compute();
}

void GradReducer::gather_updated(float* state_arena) {
  std::lock_guard<std::mutex> lock(mu_);
  RT_ASSERT(launched_ == done_);
  for (size_t b = 0; b < buckets_.size(); ++b)
    collective_->gather_updated(state_arena + buckets_[b].offset, buckets_[b].count,
                                WaitContext{step_, static_cast<int>(b), "optimizer state all-gather"});
  if (StreamOrder* order = collective_->stream_order()) order->join_compute();
}

// Spans inside the bucket's: each finished slice's update as it lands, inside the reduce-scatter
// (with a finish, apply only notes the slice, and the update is finish's span, between the
// reduce-scatter and the all-gather).
ShardUpdate GradReducer::timed(ShardUpdate update) {
  ShardUpdate u = update;
  const bool finishes = static_cast<bool>(update.finish);
  u.apply = [this, apply = update.apply, finishes, name = update.name](int64_t begin, int64_t count) {
    const double t0 = timeline_->now_us();
    apply(begin, count);
    if (!finishes) timeline_->span(name.c_str(), "optimizer", t0, timeline_->now_us(), 1, timeline_bucket_);
  };
  if (finishes)
    u.finish = [this, finish = update.finish, name = update.name](int64_t begin, int64_t count) {
      const double t0 = timeline_->now_us();
      finish(begin, count);
      timeline_->span(name.c_str(), "optimizer", t0, timeline_->now_us(), 1, timeline_bucket_);
    };
  return u;
}

void GradReducer::comm_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || done_ < launched_; });
    if (stop_) return;
    const size_t b = done_;
    const int64_t step = step_;
    lock.unlock();
    try {
      const Bucket& bucket = buckets_[b];
      const double start = timeline_ ? timeline_->now_us() : 0;
      const auto began = std::chrono::steady_clock::now();
      const WaitContext context{step, static_cast<int>(b), ""};
      inject_fault("allreduce", World::get().rank(), step);
      timeline_bucket_ = static_cast<int64_t>(b);
      PhaseSwitch at;
      if (update_)
        at = collective_->average(arena_ + bucket.offset, bucket.count, context, update_->at(bucket.offset));
      else
        at = hook_->average_bucket(arena_, b, bucket, step, *collective_, context, timeline_);
      bucket_seconds_[b] = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      if (timeline_) {
        timeline_->span("queued", "bucket", ready_us_[b] > 0 ? ready_us_[b] : start, start, 1, static_cast<int64_t>(b));
        const double end = timeline_->now_us();
        timeline_->span("allreduce", "bucket", start, end, 1, static_cast<int64_t>(b));
        if (at) {  // nested under "allreduce"
          const double split = std::clamp(timeline_->us_at(*at), start, end);
          timeline_->span("reduce-scatter", "ring", start, split, 1, static_cast<int64_t>(b));
          timeline_->span("all-gather", "ring", split, end, 1, static_cast<int64_t>(b));
        }
      }
    } catch (...) {
      lock.lock();
      error_ = std::current_exception();
      cv_.notify_all();
      return;
    }
    lock.lock();
    ++done_;
    cv_.notify_all();
  }
}

}  // namespace rt
