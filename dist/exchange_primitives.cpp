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

void ExchangePrimitives::post_receives(const RingOp&, ChunkRange) { received_ = false; }

// Reduce-scatter receives are added in (and, on a float32 wire, scaled on the last of them);
// all-gather receives land in place. With the wire type they land in a stage first: reduce-scatter
// receives in the receive stage, all-gather ones in the send stage, from which they go on as they
// came.
void ExchangePrimitives::receive(const RingOp& op, ChunkRange slice) {
  received_ = true;
  const int64_t at = slice.begin, n = slice.count;
  const size_t floats_bytes = sizeof(float) * static_cast<size_t>(n);
  const size_t wire_n_bytes = wire_bytes(run_.wire) * static_cast<size_t>(n);
  if (op.reduce() && !run_.narrow_reduce) {
    float* incoming = static_cast<float*>(buffer(kIncoming, 0));
    exchange(incoming, floats_bytes);
    add(run_.reduced + at, incoming, n, op.final_reduce() ? run_.final_scale : 1.0f);
  } else if (op.reduce()) {
    exchange(stage(kRecvStage) + at, wire_n_bytes);
    add_wire(run_.reduced + at, stage(kRecvStage) + at, n, run_.wire);
  } else if (run_.narrow_gather) {
    exchange(stage(kSendStage) + at, wire_n_bytes);
    widen(stage(kSendStage) + at, run_.gathered + at, n, run_.wire);
  } else {
    exchange(run_.gathered + at, floats_bytes);
  }
}

// The owner of a finished chunk rounds its own copy to what it sends, so that every rank ends
// with the same values.
void ExchangePrimitives::send(const RingOp& op, ChunkRange slice) {
  const int64_t at = slice.begin, n = slice.count;
  const bool narrowed = op.partial ? run_.narrow_reduce : run_.narrow_gather;
  float* const from = op.partial ? run_.reduced : run_.gathered;
  if (!narrowed) {
    held_ = from + at, held_bytes_ = sizeof(float) * static_cast<size_t>(n);
    return;
  }
  uint16_t* const out = stage(kSendStage) + at;
  if (op.kind != RingOpKind::kRecvCopySend) {  // an all-gather forward is in the send stage already
    narrow(from + at, out, n, run_.wire);
    if (!op.partial) widen(out, from + at, n, run_.wire);
  }
  held_ = out, held_bytes_ = wire_bytes(run_.wire) * static_cast<size_t>(n);
}

// A step whose chunk is empty still makes its one exchange, sending what it holds.
void ExchangePrimitives::end_step(const RingOp&) {
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
