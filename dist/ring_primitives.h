// What the ring executor (ring_executor.h) asks of whatever moves a ring's bytes: receive a slice
// of a chunk and reduce or keep it, send a slice on (Note [Ring primitives] in ring_schedule.h).
// The CPU implements them over a Transport (transport_primitives.h), the GPU over a
// DeviceExchange and kernels of its own (dist/cuda/exchange_primitives.cuh).
#pragma once

#include <cstdint>

#include "dist/ring_schedule.h"
#include "dist/transport.h"
#include "dist/wire_format.h"

namespace rt {

// What one operation does with each of its slices, resolved by the executor from the op and the
// run (RingExecutor::move), so that the primitives only move bytes and add: which buffer, whether
// a slice travels in the wire type and who rounds are decided in one place.
struct RingMove {
  bool receives = false;     // a receive op (every kind but kSend)
  bool add = false;          // its slices are added into `into` (reduce-scatter), else kept there
  float* into = nullptr;     // run.reduced where they are added, run.gathered where kept
  bool narrow_in = false;    // they arrive in the wire type
  float scale = 1;           // the sum is multiplied by it (the last reduce-scatter receive's)
  float* from = nullptr;     // what is sent: partial sums from run.reduced, else run.gathered
  bool narrow_out = false;   // it leaves in the wire type
  bool as_received = false;  // ... as it arrived, not narrowed again (an all-gather forward)
  bool round_own = false;    // the sender's own copy becomes what it sends (widened back)
};

// One run of the executor, as its primitives see it.
struct RingRun {
  float* reduced = nullptr;   // reduce-scatter receives add into it, partial sums are sent from it
  float* gathered = nullptr;  // the final chunk's result, and the all-gather's chunks
  int64_t count = 0;          // of both buffers
  Wire wire = Wire::kFp32;
  bool narrow_reduce = false;  // the reduce-scatter travels in the wire type
  bool narrow_gather = false;  // ... and so does the all-gather (averages, not parameters or state)
  float final_scale = 1;       // what the last reduce-scatter receive multiplies the sum by
  WaitContext context;
};

class RingPrimitives {
 public:
  virtual ~RingPrimitives() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  // The largest slice a receive handles: chunks are cut into slices of it, each reduced and sent
  // on as it lands. An exchange that moves whole chunks says so with a huge one.
  virtual int64_t slice_floats() const = 0;
  // data[0, count) *= s.
  virtual void scale(float* data, int64_t count, float s) = 0;
  virtual void begin(const RingRun& run) = 0;
  // Before a receive op's first slice: all of chunk's slices may be posted now.
  virtual void post_receives(const RingMove& move, ChunkRange chunk) = 0;
  // One slice of the chunk has landed: added into move.into times move.scale, or kept there.
  virtual void receive(const RingMove& move, ChunkRange slice) = 0;
  // Sends a slice of move.from on to the next rank.
  virtual void send(const RingMove& move, ChunkRange slice) = 0;
  // After a receive op's slices: the sends of the operation before it have left.
  virtual void end_step(const RingMove& move) = 0;
  // After the run's last operation.
  virtual void end() = 0;
};

}  // namespace rt
