// The ring's primitives (ring_primitives.h) over a Transport on host memory: all of a step's
// receives are posted at once, each slice is reduced as it lands and its forward posted at once,
// so the next step's transfer overlaps this step's reduction; a step's sends are awaited after
// the next step's receives. A 16-bit wire goes through send and receive stages at the buffer's
// own offsets.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dist/ring_executor.h"
#include "dist/ring_primitives.h"
#include "dist/transport.h"

namespace rt {

class TransportPrimitives final : public RingPrimitives {
 public:
  TransportPrimitives(Transport& transport, int64_t slice_floats) : t_(transport), slice_(slice_floats) {}
  int rank() const override { return t_.rank(); }
  int world() const override { return t_.world(); }
  int64_t slice_floats() const override { return slice_; }
  void scale(float* data, int64_t count, float s) override;
  void begin(const RingRun& run) override;
  void post_receives(const RingMove& move, ChunkRange chunk) override;
  void receive(const RingMove& move, ChunkRange slice) override;
  void send(const RingMove& move, ChunkRange slice) override;
  void end_step(const RingMove& move) override;
  void end() override { t_.reset(); }

 private:
  // Posts elements [at, at + n) of a float buffer: as they are, or narrowed into the send stage.
  Transport::Handle send_floats(const float* buffer, int64_t at, int64_t n, bool narrow);

  Transport& t_;
  int64_t slice_;
  RingRun run_;
  int next_ = 0, prev_ = 0;
  std::vector<Transport::Handle> recvs_;               // this step's, in slice order
  size_t received_ = 0;                                // of recvs_
  std::vector<Transport::Handle> sends_, next_sends_;  // the step's before this one, and this one's
  // With a 16-bit wire: what this rank sends and receives, at the buffer's offsets.
  std::vector<uint16_t> send_stage_, recv_stage_;
};

// The ring over `transport`, in slices of slice_floats (RingExecutor's result_scale).
inline RingExecutor transport_ring(Transport& transport, Wire wire = Wire::kFp32, float result_scale = 0,
                                   int64_t slice_floats = int64_t{1} << 17) {
  return RingExecutor(std::make_unique<TransportPrimitives>(transport, slice_floats), wire, result_scale);
}

}  // namespace rt
