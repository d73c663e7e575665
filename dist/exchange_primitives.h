// The ring's primitives (ring_primitives.h) over a DeviceExchange (device_watch.h), the GPU's way
// of moving a ring's bytes: an exchange sends and receives together (NCCL runs both in one group,
// so no rank's send waits for a receive its neighbour has not reached), so a send is held until
// the step's receive goes with it, and every step is exactly one exchange on every rank. A chunk
// is one slice. The per-element work (adding in, narrowing to the wire type and back) is the
// subclass's: kernels on a stream for GPU memory (dist/cuda/device_collective.cu), plain loops
// for host memory (HostExchangePrimitives, which the tests run the GPU's ring logic through
// without a GPU).
#pragma once

#include <cstdint>
#include <vector>

#include "dist/device_watch.h"
#include "dist/ring_primitives.h"

namespace rt {

class ExchangePrimitives : public RingPrimitives {
 public:
  // stream: what exchange() is given (a cudaStream_t; null on the host).
  ExchangePrimitives(DeviceExchange& exchange, void* stream) : x_(exchange), stream_(stream) {}
  int rank() const override { return x_.rank(); }
  int world() const override { return x_.world(); }
  int64_t slice_floats() const override { return INT64_MAX / 2; }
  void begin(const RingRun& run) override;
  void post_receives(const RingMove& move, ChunkRange chunk) override;
  void receive(const RingMove& move, ChunkRange slice) override;
  void send(const RingMove& move, ChunkRange slice) override;
  void end_step(const RingMove& move) override;
  void end() override;
  // Buffers for runs over up to `floats` in `wire`, allocated before the step loop.
  void reserve(int64_t floats, Wire wire);

 protected:
  enum Buffer { kIncoming, kSendStage, kRecvStage };
  // At least `bytes` of the exchange's memory for `which`, kept until a larger one is asked.
  virtual void* buffer(Buffer which, size_t bytes) = 0;
  // dst = (dst + src) * scale.
  virtual void add(float* dst, const float* src, int64_t n, float scale) = 0;
  // dst += src, src in the wire type.
  virtual void add_wire(float* dst, const uint16_t* src, int64_t n, Wire wire) = 0;
  virtual void narrow(const float* src, uint16_t* dst, int64_t n, Wire wire) = 0;
  virtual void widen(const uint16_t* src, float* dst, int64_t n, Wire wire) = 0;

 private:
  // One exchange: the held send (if any) with this receive.
  void exchange(void* recv, size_t recv_bytes);
  uint16_t* stage(Buffer which) { return static_cast<uint16_t*>(buffer(which, 0)); }

  DeviceExchange& x_;
  void* stream_;
  RingRun run_;
  const void* held_ = nullptr;  // the send waiting for the step's receive
  size_t held_bytes_ = 0;
  bool received_ = false;  // in this step
};

// On host memory, for exchanges that move host bytes (the tests' stand-ins of NCCL).
class HostExchangePrimitives final : public ExchangePrimitives {
 public:
  explicit HostExchangePrimitives(DeviceExchange& exchange) : ExchangePrimitives(exchange, nullptr) {}
  void scale(float* data, int64_t count, float s) override;

 protected:
  void* buffer(Buffer which, size_t bytes) override;
  void add(float* dst, const float* src, int64_t n, float scale) override;
  void add_wire(float* dst, const uint16_t* src, int64_t n, Wire wire) override;
  void narrow(const float* src, uint16_t* dst, int64_t n, Wire wire) override;
  void widen(const uint16_t* src, float* dst, int64_t n, Wire wire) override;

 private:
  std::vector<char> buffers_[3];
};

}  // namespace rt
