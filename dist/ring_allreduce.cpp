#include "dist/ring_allreduce.h"

#include <algorithm>

#include "dist/reduce_kernel.h"
#include "dist/ring_schedule.h"

namespace rt {

RingAllreduce::RingAllreduce(Transport& transport, int64_t slice_floats, Wire wire, float result_scale)
    : t_(transport),
      slice_(slice_floats),
      wire_(wire),
      scale_(result_scale != 0 ? result_scale : 1.0f / static_cast<float>(transport.world())) {}

void RingAllreduce::scale_alone(float* data, int64_t count) const {
  if (scale_ != 1.0f)
    for (int64_t i = 0; i < count; ++i) data[i] *= scale_;
}

void RingAllreduce::run(float* data, int64_t count, const WaitContext& context) {
  phase_switch_.reset();
  if (count == 0) return;
  if (t_.world() == 1) return scale_alone(data, count);
  run_steps(data, data, count, 0, ring_step_count(t_.world()), context, nullptr);
}

void RingAllreduce::reduce_scatter(float* data, int64_t count, const WaitContext& context) {
  phase_switch_.reset();
  if (count == 0) return;
  if (t_.world() == 1) return scale_alone(data, count);
  run_steps(data, data, count, 0, t_.world() - 1, context, nullptr);
}

void RingAllreduce::run(float* data, int64_t count, const WaitContext& context, const ShardUpdate& update) {
  phase_switch_.reset();
  if (count == 0) {  // finish may be a collective of its own (Note [Norms across shards])
    if (update.finish) update.finish(0, 0);
    return;
  }
  if (t_.world() == 1) {
    scale_alone(data, count);
    update.apply(0, count);
    if (update.finish) update.finish(0, count);
    return;
  }
  if (!update.finish) return run_steps(data, update.gather, count, 0, ring_step_count(t_.world()), context, &update);
  // The all-gather of parameters waits for finish: the phases run one after the other.
  run_steps(data, update.gather, count, 0, t_.world() - 1, context, &update);
  update.finish(0, count);
  phase_switch_ = std::chrono::steady_clock::now();  // the all-gather starts after the update
  run_steps(update.gather, update.gather, count, t_.world() - 1, ring_step_count(t_.world()), context, nullptr);
}

void RingAllreduce::gather(float* data, int64_t count, const WaitContext& context) {
  phase_switch_.reset();
  if (t_.world() == 1 || count == 0) return;
  run_steps(data, data, count, t_.world() - 1, ring_step_count(t_.world()), context, nullptr);
}

void RingAllreduce::run_steps(float* reduced, float* gathered, int64_t count, int first_step, int end_step,
                              const WaitContext& context, const ShardUpdate* update) {
  const int world = t_.world(), rank = t_.rank();
  const int next = ring_next(rank, world), prev = ring_prev(rank, world);
  // Which phases travel in the wire type: the reduce-scatter of gradients, and their all-gather
  // unless what is gathered is parameters (a sharded update) or optimizer state (gather()).
  const bool narrow_reduce = wire_ != Wire::kFp32;
  const bool narrow_gather =
      narrow_reduce && update == nullptr && first_step == 0 && end_step == ring_step_count(world);
  const size_t elem_bytes = wire_bytes(wire_);
  if (narrow_reduce) {
    send_stage_.resize(std::max(send_stage_.size(), static_cast<size_t>(count)));
    recv_stage_.resize(std::max(recv_stage_.size(), static_cast<size_t>(count)));
  }
  // Note [Wire scaling]: a 16-bit wire carries each rank's share of the average; float32 carries
  // the sum, scaled to the average by the receiver of the last reduce-scatter step.
  if (narrow_reduce && first_step == 0) scale_alone(reduced, count);
  const float final_scale = narrow_reduce ? 1.0f : scale_;

  auto slice_len = [&](const ChunkRange& c, int64_t at) { return std::min(slice_, c.count - at); };
  // Sends elements [at, at + n) of a float buffer: as they are, or narrowed into the send stage.
  auto send_floats = [&](const float* buffer, int64_t at, int64_t n, bool narrow) {
    if (!narrow) return t_.post_send(buffer + at, sizeof(float) * static_cast<size_t>(n), next);
    uint16_t* w = send_stage_.data() + at;
    narrow_to_wire(buffer + at, w, static_cast<size_t>(n), wire_);
    return t_.post_send(w, elem_bytes * static_cast<size_t>(n), next);
  };
  // The chunk a rank receives at step s is the chunk it sends at step s + 1 (Note [Ring
  // schedule]), so each slice is forwarded as soon as it is final, not after the whole step:
  // the next step's transfer overlaps this step's reduction.
  std::vector<Transport::Handle> sends;  // sends of the step about to be waited for
  const RingStep opening = ring_step(rank, world, first_step);
  const ChunkRange first = chunk_range(count, world, opening.send_chunk);
  for (int64_t at = 0; at < first.count; at += slice_)
    sends.push_back(opening.reduce ? send_floats(reduced, first.begin + at, slice_len(first, at), narrow_reduce)
                                   : send_floats(gathered, first.begin + at, slice_len(first, at), false));
  WaitContext ctx = context;
  for (int step = first_step; step < end_step; ++step) {
    const RingStep s = ring_step(rank, world, step);
    const bool narrow = s.reduce ? narrow_reduce : narrow_gather;
    const ChunkRange in = chunk_range(count, world, s.recv_chunk);
    // Reduce-scatter receives are added in (and, on a float32 wire, scaled on the last of them);
    // all-gather receives land in place. With the wire type both land in the receive stage first.
    float* dst = s.reduce ? reduced : gathered;
    std::vector<Transport::Handle> recvs, next_sends;
    for (int64_t at = in.begin; at < in.begin + in.count; at += slice_) {
      const int64_t n = slice_len(in, at - in.begin);
      if (narrow)
        recvs.push_back(t_.post_recv(recv_stage_.data() + at, elem_bytes * static_cast<size_t>(n), prev));
      else if (s.reduce)
        recvs.push_back(
            t_.post_recv_reduce(dst + at, static_cast<size_t>(n), prev, s.final_reduce ? final_scale : 1.0f));
      else
        recvs.push_back(t_.post_recv(dst + at, sizeof(float) * static_cast<size_t>(n), prev));
    }
    ctx.what = s.reduce ? "reduce-scatter receive" : "all-gather receive";
    for (size_t k = 0; k < recvs.size(); ++k) {
      t_.wait(recvs[k], ctx);
      const int64_t at = in.begin + static_cast<int64_t>(k) * slice_;
      const int64_t n = slice_len(in, at - in.begin);
      const size_t un = static_cast<size_t>(n);
      if (narrow && s.reduce)
        add_from_wire(dst + at, recv_stage_.data() + at, un, 1.0f, wire_);
      else if (narrow)
        widen_from_wire(recv_stage_.data() + at, dst + at, un, wire_);
      if (s.final_reduce && update) update->apply(at, n);
      if (step + 1 == end_step) continue;
      // Forward the slice: a partial sum onward, or the finished one into the all-gather (the
      // owner rounds its own copy to what it sends, so every rank ends with the same values).
      if (s.final_reduce && narrow_gather) {
        next_sends.push_back(send_floats(dst, at, n, true));
        widen_from_wire(send_stage_.data() + at, dst + at, un, wire_);
      } else if (s.reduce && !s.final_reduce) {
        next_sends.push_back(send_floats(reduced, at, n, narrow_reduce));
      } else if (narrow_gather) {
        next_sends.push_back(t_.post_send(recv_stage_.data() + at, elem_bytes * un, next));
      } else {
        next_sends.push_back(send_floats(gathered, at, n, false));
      }
    }
    ctx.what = s.reduce ? "reduce-scatter send" : "all-gather send";
    for (Transport::Handle h : sends) t_.wait(h, ctx);
    sends.swap(next_sends);
    if (s.final_reduce) phase_switch_ = std::chrono::steady_clock::now();
  }
  t_.reset();
}

}  // namespace rt
