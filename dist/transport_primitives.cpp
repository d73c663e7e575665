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

// Reduce-scatter receives are added in (and, on a float32 wire, scaled on the last of them);
// all-gather receives land in place. With the wire type both land in the receive stage first.
void TransportPrimitives::post_receives(const RingOp& op, ChunkRange chunk) {
  const bool narrow = op.reduce() ? run_.narrow_reduce : run_.narrow_gather;
  recvs_.clear();
  received_ = 0;
  for (int64_t at = chunk.begin; at < chunk.begin + chunk.count; at += slice_) {
    const auto n = static_cast<size_t>(std::min(slice_, chunk.begin + chunk.count - at));
    if (narrow)
      recvs_.push_back(t_.post_recv(recv_stage_.data() + at, wire_bytes(run_.wire) * n, prev_));
    else if (op.reduce())
      recvs_.push_back(t_.post_recv_reduce(run_.reduced + at, n, prev_, op.final_reduce() ? run_.final_scale : 1.0f));
    else
      recvs_.push_back(t_.post_recv(run_.gathered + at, sizeof(float) * n, prev_));
  }
}

void TransportPrimitives::receive(const RingOp& op, ChunkRange slice) {
  WaitContext ctx = run_.context;
  ctx.what = op.reduce() ? "reduce-scatter receive" : "all-gather receive";
  t_.wait(recvs_.at(received_++), ctx);
  const auto n = static_cast<size_t>(slice.count);
  if (op.reduce() && run_.narrow_reduce)
    add_from_wire(run_.reduced + slice.begin, recv_stage_.data() + slice.begin, n, 1.0f, run_.wire);
  else if (!op.reduce() && run_.narrow_gather)
    widen_from_wire(recv_stage_.data() + slice.begin, run_.gathered + slice.begin, n, run_.wire);
}

// The owner of a finished chunk rounds its own copy to what it sends, so that every rank ends
// with the same values.
void TransportPrimitives::send(const RingOp& op, ChunkRange slice) {
  std::vector<Transport::Handle>& into = op.kind == RingOpKind::kSend ? sends_ : next_sends_;
  const int64_t at = slice.begin, n = slice.count;
  if (op.partial) {
    into.push_back(send_floats(run_.reduced, at, n, run_.narrow_reduce));
  } else if (op.kind == RingOpKind::kRecvCopySend && run_.narrow_gather) {  // forwarded as it came
    into.push_back(t_.post_send(recv_stage_.data() + at, wire_bytes(run_.wire) * static_cast<size_t>(n), next_));
  } else {
    into.push_back(send_floats(run_.gathered, at, n, run_.narrow_gather));
    if (run_.narrow_gather)
      widen_from_wire(send_stage_.data() + at, run_.gathered + at, static_cast<size_t>(n), run_.wire);
  }
}

void TransportPrimitives::end_step(const RingOp& op) {
  WaitContext ctx = run_.context;
  ctx.what = op.reduce() ? "reduce-scatter send" : "all-gather send";
  for (Transport::Handle h : sends_) t_.wait(h, ctx);
  sends_.swap(next_sends_);
  next_sends_.clear();
}

}  // namespace rt
