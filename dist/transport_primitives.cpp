#include "dist/transport_primitives.h"

#include <algorithm>

#include "dist/reduce_kernel.h"

namespace rt {

void TransportPrimitives::scale(float* data, int64_t count, float s) {
  if (s != 1.0f)
    for (int64_t i = 0; i < count; ++i) data[i] *= s;
}

void TransportPrimitives::begin(const RingRun& run) {
  run_ = run;
  next_ = ring_next(rank(), world());
  prev_ = ring_prev(rank(), world());
  if (run.narrow_reduce) {
    send_stage_.resize(std::max(send_stage_.size(), static_cast<size_t>(run.count)));
    recv_stage_.resize(std::max(recv_stage_.size(), static_cast<size_t>(run.count)));
  }
  sends_.clear();
  next_sends_.clear();
}

Transport::Handle TransportPrimitives::send_floats(const float* buffer, int64_t at, int64_t n, bool narrow) {
  if (!narrow) return t_.post_send(buffer + at, sizeof(float) * static_cast<size_t>(n), next_);
  uint16_t* w = send_stage_.data() + at;
  narrow_to_wire(buffer + at, w, static_cast<size_t>(n), run_.wire);
  return t_.post_send(w, wire_bytes(run_.wire) * static_cast<size_t>(n), next_);
}

// With the wire type, receives land in the receive stage first.
void TransportPrimitives::post_receives(const RingMove& move, ChunkRange chunk) {
  recvs_.clear();
  received_ = 0;
  for (int64_t at = chunk.begin; at < chunk.begin + chunk.count; at += slice_) {
    const auto n = static_cast<size_t>(std::min(slice_, chunk.begin + chunk.count - at));
    if (move.narrow_in)
      recvs_.push_back(t_.post_recv(recv_stage_.data() + at, wire_bytes(run_.wire) * n, prev_));
    else if (move.add)
      recvs_.push_back(t_.post_recv_reduce(move.into + at, n, prev_, move.scale));
    else
      recvs_.push_back(t_.post_recv(move.into + at, sizeof(float) * n, prev_));
  }
}

void TransportPrimitives::receive(const RingMove& move, ChunkRange slice) {
  WaitContext ctx = run_.context;
  ctx.what = move.add ? "reduce-scatter receive" : "all-gather receive";
  t_.wait(recvs_.at(received_++), ctx);
  if (!move.narrow_in) return;
  const auto n = static_cast<size_t>(slice.count);
  if (move.add)
    add_from_wire(move.into + slice.begin, recv_stage_.data() + slice.begin, n, move.scale, run_.wire);
  else
    widen_from_wire(recv_stage_.data() + slice.begin, move.into + slice.begin, n, run_.wire);
}

// A receive op's sends are awaited after the next op's receives; the opening send's after the
// first receive op's.
void TransportPrimitives::send(const RingMove& move, ChunkRange slice) {
  std::vector<Transport::Handle>& into = move.receives ? next_sends_ : sends_;
  const int64_t at = slice.begin, n = slice.count;
  if (move.as_received) {
    into.push_back(t_.post_send(recv_stage_.data() + at, wire_bytes(run_.wire) * static_cast<size_t>(n), next_));
    return;
  }
  into.push_back(send_floats(move.from, at, n, move.narrow_out));
  if (move.round_own) widen_from_wire(send_stage_.data() + at, move.from + at, static_cast<size_t>(n), run_.wire);
}

void TransportPrimitives::end_step(const RingMove& move) {
  WaitContext ctx = run_.context;
  ctx.what = move.add ? "reduce-scatter send" : "all-gather send";
  for (Transport::Handle h : sends_) t_.wait(h, ctx);
  sends_.swap(next_sends_);
  next_sends_.clear();
}

}  // namespace rt
