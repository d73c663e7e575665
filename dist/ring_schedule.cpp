#include "dist/ring_schedule.h"

#include "base/check.h"

namespace rt {

namespace {
int mod(int a, int m) { return ((a % m) + m) % m; }
}  // namespace

ChunkRange chunk_range(int64_t count, int world, int chunk) {
  RT_ASSERT(world >= 1 && chunk >= 0 && chunk < world && count >= 0);
  const int64_t base = count / world, extra = count % world;
  return {chunk * base + std::min<int64_t>(chunk, extra), base + (chunk < extra ? 1 : 0)};
}

void chunk_cuts(int64_t count, int world, int64_t base, std::vector<int64_t>& into) {
  for (int c = 1; c < world; ++c) {
    const int64_t at = chunk_range(count, world, c).begin;
    if (at > 0 && at < count && (into.empty() || into.back() != base + at)) into.push_back(base + at);
  }
}

RingStep ring_step(int rank, int world, int step) {
  RT_ASSERT(world >= 2 && step >= 0 && step < ring_step_count(world));
  RingStep s;
  if (step < world - 1) {  // phase 1: reduce-scatter
    s.send_chunk = mod(rank - step, world);
    s.recv_chunk = mod(rank - step - 1, world);
    s.reduce = true;
    s.final_reduce = step == world - 2;
  } else {  // phase 2: all-gather
    const int t = step - (world - 1);
    s.send_chunk = mod(rank + 1 - t, world);
    s.recv_chunk = mod(rank - t, world);
    s.reduce = false;
  }
  return s;
}

std::vector<RingOp> ring_ops(int rank, int world, int first, int end) {
  RT_ASSERT((first == 0 || first == world - 1) && (end == world - 1 || end == ring_step_count(world)) && first < end);
  std::vector<RingOp> ops{{RingOpKind::kSend, ring_step(rank, world, first).send_chunk, true, first == 0}};
  for (int step = first; step < end; ++step) {
    const RingStep s = ring_step(rank, world, step);
    const bool last = step + 1 == end;
    const RingOpKind kind = s.final_reduce ? RingOpKind::kRecvReduceCopySend
                            : s.reduce     ? RingOpKind::kRecvReduceSend
                            : last         ? RingOpKind::kRecv
                                           : RingOpKind::kRecvCopySend;
    ops.push_back({kind, s.recv_chunk, !last, kind == RingOpKind::kRecvReduceSend});
  }
  return ops;
}

}  // namespace rt
