// Note [Gradient hooks]: what the GradReducer does with a bucket whose gradients are final, as
// DDP's register_comm_hook takes a GradBucket. The default, PlainAverage, averages it through the
// collective; a compression is a hook of its own (PowerSGD's: Note [PowerSGD buckets] in
// dist/powersgd_buckets.h) that averages each bucket as it chooses, in as many rounds of the same
// collective as it needs, the launch order and the overlap with backward the reducer's. A second
// method is a GradHook in a file of its own and a line where the trainer makes its hook
// (app/grad_hook_choice.cpp); the reducer does not branch on which it holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "dist/bucket_plan.h"
#include "dist/collective.h"
#include "dist/timeline.h"

namespace rt {

class GradHook {
 public:
  virtual ~GradHook() = default;
  // Averages bucket `index` (`bucket`: where it lies in `arena`) of step `step` across ranks;
  // every rank ends with the same bits. Returns where a ring turned from reduce-scatter to
  // all-gather, for the timeline, where the average was one such ring. On the communication thread.
  virtual PhaseSwitch average_bucket(float* arena, size_t index, const Bucket& bucket, int64_t step,
                                     Collective& collective, const WaitContext& context, Timeline* timeline) = 0;
  // Floats this rank hands the collective in step `step` (from 0).
  virtual int64_t floats_at(int64_t step) const = 0;
  // How far its averages are from the exact ones after the last step, relative, under the
  // metric record's key `error_key()`; nullopt where they are exact. Between steps.
  virtual std::optional<double> error() const { return std::nullopt; }
  virtual const char* error_key() const { return ""; }
  // What the start banner says of it, the model having `tensors` tensors; "": nothing.
  virtual std::string describe(size_t /*tensors*/) const { return ""; }
};

// Every bucket in one average of the collective.
class PlainAverage final : public GradHook {
 public:
  explicit PlainAverage(int64_t floats) : floats_(floats) {}
  PhaseSwitch average_bucket(float* arena, size_t, const Bucket& bucket, int64_t, Collective& collective,
                             const WaitContext& context, Timeline*) override {
    return collective.average(arena + bucket.offset, bucket.count, context);
  }
  int64_t floats_at(int64_t) const override { return floats_; }

 private:
  int64_t floats_;
};

}  // namespace rt
