// Ring-allreduce (average) of a float buffer over a Transport, following Note [Ring schedule].
// Each step's chunk travels in slices: all of a step's receives and sends are posted at once and
// each received slice is reduced while the later ones are still in flight. Gradients may travel
// in a 16-bit wire type (wire_format.h); sums are always formed in float32.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "dist/transport.h"
#include "dist/wire_format.h"

namespace rt {

// What a rank does with the part of the buffer it finishes reducing (Note [Sharded update]).
struct ShardUpdate {
  // apply(begin, count): data[begin, begin + count) holds the final average; write `gather`'s same
  // range from it. Called in slices, covering exactly the chunk this rank finishes.
  std::function<void(int64_t begin, int64_t count)> apply;
  // The all-gather then shares this buffer's chunks (their owners' values) instead of data's.
  float* gather = nullptr;
  // Note [Norms across shards]: an update that needs more than its own slices (LARS's per-tensor
  // norms) gives finish: apply then only reads data, and finish(begin, count), called once per
  // buffer [begin, begin + count) (apply's offsets) on every rank after its last apply, before
  // the all-gather sends anything, writes gather. Empty: apply writes as the slices land.
  std::function<void(int64_t begin, int64_t count)> finish;
};

class RingAllreduce {
 public:
  // result_scale: what the sum is multiplied by; 0 = 1 / world, the average over this ring's ranks
  // (a ring inside a larger allreduce scales to the whole world's average, Note [Two-level ring]).
  explicit RingAllreduce(Transport& transport, int64_t slice_floats = int64_t{1} << 17, Wire wire = Wire::kFp32,
                         float result_scale = 0);
  // data[0, count) becomes the average over all ranks, on every rank: bit-identical on every rank
  // whatever the wire type (the owner of each chunk rounds its own copy as it sends it).
  void run(float* data, int64_t count, const WaitContext& context);
  // The reduce-scatter phase alone: each rank's owned chunk (owned_chunk) of data[0, count) ends
  // holding the scaled sum, in float32; the other chunks are left partly reduced.
  void reduce_scatter(float* data, int64_t count, const WaitContext& context);
  // data[0, count) is averaged; each rank applies `update` to the chunk it finishes, and every
  // rank receives update.gather's other chunks from their owners. data's other chunks are left
  // partly reduced. Only the gradients' reduce-scatter uses the wire type: parameters are
  // all-gathered in float32, as rounding them would change the model.
  void run(float* data, int64_t count, const WaitContext& context, const ShardUpdate& update);
  // The all-gather phase alone, in float32: each rank's owned chunk of data[0, count) (owned_chunk)
  // to every rank.
  void gather(float* data, int64_t count, const WaitContext& context);
  // When the last run finished its reduce-scatter (its all-gather took the rest); unset for runs
  // with nothing to exchange. For the timeline's phase spans.
  std::optional<std::chrono::steady_clock::time_point> last_phase_switch() const { return phase_switch_; }

 private:
  // Ring steps [first_step, end_step): reduce-scatter steps work on `reduced`, all-gather steps on
  // `gathered`; update (may be null) is applied to each finished slice.
  void run_steps(float* reduced, float* gathered, int64_t count, int first_step, int end_step,
                 const WaitContext& context, const ShardUpdate* update);
  // A ring of one: the sum is the rank's own data, scaled.
  void scale_alone(float* data, int64_t count) const;

  Transport& t_;
  int64_t slice_;
  Wire wire_;
  float scale_;  // of the sum: the average over the ring, or result_scale
  // With a 16-bit wire: what this rank sends and receives, at the same element offsets as the
  // buffer being reduced.
  std::vector<uint16_t> send_stage_, recv_stage_;
  std::optional<std::chrono::steady_clock::time_point> phase_switch_;
};

}  // namespace rt
