#include "dist/ring_allreduce.h"

#include <algorithm>
#include <cstring>

#include "dist/ring_schedule.h"

namespace rt {

RingAllreduce::RingAllreduce(Transport& transport, int64_t slice_floats) : t_(transport), slice_(slice_floats) {}

void RingAllreduce::run(float* data, int64_t count, const WaitContext& context) {
  const int world = t_.world(), rank = t_.rank();
  if (world == 1 || count == 0) return;
  const int next = ring_next(rank, world), prev = ring_prev(rank, world);
  const float scale = 1.0f / static_cast<float>(world);
  staging_.resize(static_cast<size_t>(chunk_range(count, world, 0).count));
  WaitContext ctx = context;
  for (int step = 0; step < ring_step_count(world); ++step) {
    const RingStep s = ring_step(rank, world, step);
    const ChunkRange out = chunk_range(count, world, s.send_chunk);
    const ChunkRange in = chunk_range(count, world, s.recv_chunk);
    // All-gather receives go straight into place; reduce-scatter receives are staged and added.
    float* recv_base = s.reduce ? staging_.data() : data + in.begin;
    std::vector<Transport::Handle> recvs, sends;
    for (int64_t at = 0; at < in.count; at += slice_)
      recvs.push_back(t_.post_recv(recv_base + at, sizeof(float) * static_cast<size_t>(std::min(slice_, in.count - at)), prev));
    for (int64_t at = 0; at < out.count; at += slice_)
      sends.push_back(t_.post_send(data + out.begin + at, sizeof(float) * static_cast<size_t>(std::min(slice_, out.count - at)), next));
    ctx.what = s.reduce ? "reduce-scatter receive" : "all-gather receive";
    for (size_t k = 0; k < recvs.size(); ++k) {
      t_.wait(recvs[k], ctx);
      if (!s.reduce) continue;
      const int64_t begin = static_cast<int64_t>(k) * slice_, end = std::min(in.count, begin + slice_);
      float* dst = data + in.begin;
      const float* src = staging_.data();
      if (s.final_reduce) {
        for (int64_t i = begin; i < end; ++i) dst[i] = (dst[i] + src[i]) * scale;
      } else {
        for (int64_t i = begin; i < end; ++i) dst[i] += src[i];
      }
    }
    ctx.what = s.reduce ? "reduce-scatter send" : "all-gather send";
    for (Transport::Handle h : sends) t_.wait(h, ctx);
    t_.reset();
  }
}

}  // namespace rt
