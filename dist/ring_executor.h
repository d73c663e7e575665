// Ring-allreduce (average) of a float buffer, following Note [Ring schedule]: the one interpreter
// of the schedule's operations (Note [Ring primitives]) over any RingPrimitives, the CPU's
// transports and the GPU's exchanges alike. Each chunk travels in the primitives' slices, each
// received slice reduced and sent on while later ones are still in flight. Gradients may travel
// in a 16-bit wire type (wire_format.h); sums are always formed in float32.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "dist/ring_primitives.h"
#include "dist/shard_update.h"

namespace rt {

class RingExecutor {
 public:
  // result_scale: what the sum is multiplied by; 0 = 1 / world, the average over this ring's ranks
  // (a ring inside a larger allreduce scales to the whole world's average, Note [Two-level ring]).
  explicit RingExecutor(std::unique_ptr<RingPrimitives> primitives, Wire wire = Wire::kFp32, float result_scale = 0);
  int rank() const { return p_->rank(); }
  int world() const { return p_->world(); }
  // data[0, count) becomes the average over all ranks, on every rank: bit-identical on every rank
  // whatever the wire type (the owner of each chunk rounds its own copy as it sends it).
  void run(float* data, int64_t count, const WaitContext& context);
  // data[0, count) is averaged; each rank applies `update` to the chunk it finishes, and every
  // rank receives update.gathered()'s other chunks from their owners. data's other chunks are left
  // partly reduced. Only the gradients' reduce-scatter uses the wire type: parameters are
  // all-gathered in float32, as rounding them would change the model.
  void run(float* data, int64_t count, const WaitContext& context, const ShardUpdate& update);
  // The reduce-scatter phase alone: each rank's owned chunk (owned_chunk) of data[0, count) ends
  // holding the scaled sum, in float32; the other chunks are left partly reduced.
  void reduce_scatter(float* data, int64_t count, const WaitContext& context);
  // The all-gather phase alone, in float32: each rank's owned chunk of data[0, count) to every rank.
  void gather(float* data, int64_t count, const WaitContext& context);
  // When the last run finished its reduce-scatter (its all-gather took the rest); unset for runs
  // with nothing to exchange. For the timeline's phase spans.
  std::optional<std::chrono::steady_clock::time_point> last_phase_switch() const { return phase_switch_; }

 private:
  // The schedule's operations for steps [first, end) over run's buffers; `update` (may be null)
  // applied to each slice as it becomes final.
  void run_ops(RingRun run, int first, int end, const ShardUpdate* update);
  // What op does with its slices in `run` (Note [One rule per slice] in ring_executor.cpp).
  static RingMove move(const RingOp& op, const RingRun& run);
  RingRun whole(float* reduced, float* gathered, int64_t count, const WaitContext& context, bool narrow_gather) const;

  std::unique_ptr<RingPrimitives> p_;
  Wire wire_;
  float scale_;  // of the sum: the average over the ring, or result_scale
  std::optional<std::chrono::steady_clock::time_point> phase_switch_;
};

}  // namespace rt
