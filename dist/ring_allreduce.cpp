#include "dist/ring_allreduce.h"

#include <algorithm>
#include <vector>

#include "dist/ring_schedule.h"

namespace rt {

RingAllreduce::RingAllreduce(Transport& transport, int64_t slice_floats) : t_(transport), slice_(slice_floats) {}

void RingAllreduce::run(float* data, int64_t count, const WaitContext& context) {
  phase_switch_.reset();
  if (t_.world() == 1 || count == 0) return;
  run_steps(data, data, count, 0, context, nullptr);
}

void RingAllreduce::run(float* data, int64_t count, const WaitContext& context, const ShardUpdate& update) {
  phase_switch_.reset();
  if (count == 0) return;
  if (t_.world() == 1) {
    update.apply(0, count);
    return;
  }
  run_steps(data, update.gather, count, 0, context, &update);
}

void RingAllreduce::gather(float* data, int64_t count, const WaitContext& context) {
  phase_switch_.reset();
  if (t_.world() == 1 || count == 0) return;
  run_steps(data, data, count, t_.world() - 1, context, nullptr);
}

void RingAllreduce::run_steps(float* reduced, float* gathered, int64_t count, int first_step,
                              const WaitContext& context, const ShardUpdate* update) {
  const int world = t_.world(), rank = t_.rank();
  const int next = ring_next(rank, world), prev = ring_prev(rank, world);
  const float scale = 1.0f / static_cast<float>(world);
  const int steps = ring_step_count(world);
  auto slice_bytes = [&](const ChunkRange& c, int64_t at) {
    return sizeof(float) * static_cast<size_t>(std::min(slice_, c.count - at));
  };
  // The chunk a rank receives at step s is the chunk it sends at step s + 1 (Note [Ring
  // schedule]), so each slice is forwarded as soon as it is final, not after the whole step:
  // the next step's transfer overlaps this step's reduction.
  std::vector<Transport::Handle> sends;  // sends of the step about to be waited for
  const RingStep opening = ring_step(rank, world, first_step);
  float* const opening_buffer = opening.reduce ? reduced : gathered;
  const ChunkRange first = chunk_range(count, world, opening.send_chunk);
  for (int64_t at = 0; at < first.count; at += slice_)
    sends.push_back(t_.post_send(opening_buffer + first.begin + at, slice_bytes(first, at), next));
  WaitContext ctx = context;
  for (int step = first_step; step < steps; ++step) {
    const RingStep s = ring_step(rank, world, step);
    const ChunkRange in = chunk_range(count, world, s.recv_chunk);
    // Reduce-scatter receives are added in (and scaled to the average on the last of them);
    // all-gather receives land in place.
    float* dst = (s.reduce ? reduced : gathered) + in.begin;
    // What the next step sends of this chunk: after the last reduction, the gathered buffer.
    const float* forward = (s.final_reduce ? gathered : s.reduce ? reduced : gathered) + in.begin;
    std::vector<Transport::Handle> recvs, next_sends;
    for (int64_t at = 0; at < in.count; at += slice_) {
      const size_t bytes = slice_bytes(in, at);
      recvs.push_back(s.reduce ? t_.post_recv_reduce(dst + at, bytes / sizeof(float), prev, s.final_reduce ? scale : 1.0f)
                               : t_.post_recv(dst + at, bytes, prev));
    }
    ctx.what = s.reduce ? "reduce-scatter receive" : "all-gather receive";
    for (size_t k = 0; k < recvs.size(); ++k) {
      t_.wait(recvs[k], ctx);
      const int64_t begin = static_cast<int64_t>(k) * slice_;
      if (s.final_reduce && update) update->apply(in.begin + begin, static_cast<int64_t>(slice_bytes(in, begin) / sizeof(float)));
      if (step + 1 < steps) next_sends.push_back(t_.post_send(forward + begin, slice_bytes(in, begin), next));
    }
    ctx.what = s.reduce ? "reduce-scatter send" : "all-gather send";
    for (Transport::Handle h : sends) t_.wait(h, ctx);
    sends.swap(next_sends);
    if (s.final_reduce) phase_switch_ = std::chrono::steady_clock::now();
  }
  t_.reset();
}

}  // namespace rt
