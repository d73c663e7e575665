#include "dist/exchange_primitives.h"

#include <algorithm>

#include "base/check.h"
#include "dist/reduce_kernel.h"

namespace rt {

void ExchangePrimitives::reserve(int64_t floats, Wire wire) {
  const auto n = static_cast<size_t>(std::max<int64_t>(floats, 1));
  buffer(kIncoming, sizeof(float) * (n / static_cast<size_t>(world()) + 1));  // one chunk
  if (wire != Wire::kFp32) {
    buffer(kSendStage, wire_bytes(wire) * n);
    buffer(kRecvStage, wire_bytes(wire) * n);
  }
}

void ExchangePrimitives::begin(const RingRun& run) {
  run_ = run;
  reserve(run.count, run.narrow_reduce || run.narrow_gather ? run.wire : Wire::kFp32);
  held_ = nullptr;
  held_bytes_ = 0;
}

void ExchangePrimitives::exchange(void* recv, size_t recv_bytes) {
  x_.exchange(held_, held_bytes_, ring_next(rank(), world()), recv, recv_bytes, ring_prev(rank(), world()), stream_);
  held_ = nullptr;
  held_bytes_ = 0;
}

void ExchangePrimitives::post_receives(const RingMove&, ChunkRange) { received_ = false; }

// With the wire type, receives land in a stage first: reduce-scatter ones in the receive stage,
// all-gather ones in the send stage, from which they go on as they came.
void ExchangePrimitives::receive(const RingMove& move, ChunkRange slice) {
  received_ = true;
  const int64_t at = slice.begin, n = slice.count;
  if (!move.narrow_in && !move.add) return exchange(move.into + at, sizeof(float) * static_cast<size_t>(n));
  if (!move.narrow_in) {
    float* incoming = static_cast<float*>(buffer(kIncoming, 0));
    exchange(incoming, sizeof(float) * static_cast<size_t>(n));
    return add(move.into + at, incoming, n, move.scale);
  }
  uint16_t* const staged = stage(move.add ? kRecvStage : kSendStage) + at;
  exchange(staged, wire_bytes(run_.wire) * static_cast<size_t>(n));
  if (move.add) {
    RT_ASSERT(move.scale == 1.0f);  // a 16-bit wire is scaled before the first send (Note [Wire scaling])
    add_wire(move.into + at, staged, n, run_.wire);
  } else {
    widen(staged, move.into + at, n, run_.wire);
  }
}

void ExchangePrimitives::send(const RingMove& move, ChunkRange slice) {
  const int64_t at = slice.begin, n = slice.count;
  if (!move.narrow_out) {
    held_ = move.from + at, held_bytes_ = sizeof(float) * static_cast<size_t>(n);
    return;
  }
  uint16_t* const out = stage(kSendStage) + at;  // an all-gather forward is there already
  if (!move.as_received) narrow(move.from + at, out, n, run_.wire);
  if (move.round_own) widen(out, move.from + at, n, run_.wire);
  held_ = out, held_bytes_ = wire_bytes(run_.wire) * static_cast<size_t>(n);
}

// A step whose chunk is empty still makes its one exchange, sending what it holds.
void ExchangePrimitives::end_step(const RingMove&) {
  if (!received_) exchange(nullptr, 0);
}

void ExchangePrimitives::end() { RT_ASSERT(held_ == nullptr); }

void HostExchangePrimitives::scale(float* data, int64_t count, float s) {
  if (s != 1.0f)
    for (int64_t i = 0; i < count; ++i) data[i] *= s;
}

void* HostExchangePrimitives::buffer(Buffer which, size_t bytes) {
  std::vector<char>& b = buffers_[which];
  if (b.size() < bytes) b.resize(bytes);
  return b.data();
}

void HostExchangePrimitives::add(float* dst, const float* src, int64_t n, float scale) {
  add_into(dst, src, static_cast<size_t>(n), scale);
}
void HostExchangePrimitives::add_wire(float* dst, const uint16_t* src, int64_t n, Wire wire) {
  add_from_wire(dst, src, static_cast<size_t>(n), 1.0f, wire);
}
void HostExchangePrimitives::narrow(const float* src, uint16_t* dst, int64_t n, Wire wire) {
  narrow_to_wire(src, dst, static_cast<size_t>(n), wire);
}
void HostExchangePrimitives::widen(const uint16_t* src, float* dst, int64_t n, Wire wire) {
  widen_from_wire(src, dst, static_cast<size_t>(n), wire);
}

}  // namespace rt
