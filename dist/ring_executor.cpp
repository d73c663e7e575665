#include "dist/ring_executor.h"

#include <algorithm>
#include <utility>

namespace rt {

RingExecutor::RingExecutor(std::unique_ptr<RingPrimitives> primitives, Wire wire, float result_scale)
    : p_(std::move(primitives)),
      wire_(wire),
      scale_(result_scale != 0 ? result_scale : 1.0f / static_cast<float>(p_->world())) {}

// Note [Wire scaling] in dist/wire_format.h: a 16-bit wire carries each rank's share of the average
// (scaled before the first send, run_ops); float32 carries the sum, scaled by the receiver of the
// last reduce-scatter step.
RingRun RingExecutor::whole(float* reduced, float* gathered, int64_t count, const WaitContext& context,
                            bool narrow_gather) const {
  const bool narrow = wire_ != Wire::kFp32;
  return RingRun{reduced, gathered, count, wire_, narrow, narrow && narrow_gather, narrow ? 1.0f : scale_, context};
}

void RingExecutor::run(float* data, int64_t count, const WaitContext& context) {
  phase_switch_.reset();
  if (count == 0) return;
  if (world() == 1) return p_->scale(data, count, scale_);
  run_ops(whole(data, data, count, context, true), 0, ring_step_count(world()), nullptr);
}

void RingExecutor::reduce_scatter(float* data, int64_t count, const WaitContext& context) {
  phase_switch_.reset();
  if (count == 0) return;
  if (world() == 1) return p_->scale(data, count, scale_);
  run_ops(whole(data, data, count, context, false), 0, world() - 1, nullptr);
}

void RingExecutor::gather(float* data, int64_t count, const WaitContext& context) {
  phase_switch_.reset();
  if (world() == 1 || count == 0) return;
  run_ops(RingRun{data, data, count, Wire::kFp32, false, false, 1.0f, context}, world() - 1, ring_step_count(world()),
          nullptr);
}

void RingExecutor::run(float* data, int64_t count, const WaitContext& context, const ShardUpdate& update) {
  phase_switch_.reset();
  if (count == 0) return update.finish_for(0, 0);  // finish may be a collective of its own
  if (world() == 1) {
    p_->scale(data, count, scale_);
    update.apply_to(0, count);
    return update.finish_for(0, count);
  }
  const RingRun run = whole(data, update.gathered(), count, context, false);
  if (!update.finish) return run_ops(run, 0, ring_step_count(world()), &update);
  // The all-gather of parameters waits for finish: the phases run one after the other.
  run_ops(run, 0, world() - 1, &update);
  update.finish_for(0, count);
  const auto switched = std::chrono::steady_clock::now();  // the all-gather starts after the update
  gather(update.gathered(), count, context);
  phase_switch_ = switched;
}

// Note [One rule per slice]
// Every rank must end a run with the same bits. Float32 sums are formed on one rank each and
// copied, so they agree; but a finished chunk sent in a 16-bit wire type arrives rounded, so its
// owner rounds its own copy to what it sends (round_own). What is forwarded in the all-gather goes
// on as it arrived (as_received), never rounded twice. Partial sums are sent narrowed but kept in
// float32 by their sender, as they are not final.
RingMove RingExecutor::move(const RingOp& op, const RingRun& run) {
  RingMove m;
  m.receives = op.kind != RingOpKind::kSend;
  m.add = op.reduce();
  m.into = m.add ? run.reduced : run.gathered;
  m.narrow_in = m.add ? run.narrow_reduce : run.narrow_gather;
  m.scale = op.final_reduce() ? run.final_scale : 1.0f;
  m.from = op.partial ? run.reduced : run.gathered;
  m.narrow_out = op.partial ? run.narrow_reduce : run.narrow_gather;
  m.as_received = m.narrow_out && op.kind == RingOpKind::kRecvCopySend;
  m.round_own = m.narrow_out && !op.partial && !m.as_received;
  return m;
}

// The one interpreter of the schedule (Note [Ring primitives] in ring_schedule.h).
void RingExecutor::run_ops(RingRun run, int first, int end, const ShardUpdate* update) {
  if (run.narrow_reduce && first == 0) p_->scale(run.reduced, run.count, scale_);
  p_->begin(run);
  const int64_t slice = p_->slice_floats();
  for (const RingOp& op : ring_ops(p_->rank(), p_->world(), first, end)) {
    const ChunkRange chunk = chunk_range(run.count, p_->world(), op.chunk);
    const RingMove m = move(op, run);
    if (m.receives) p_->post_receives(m, chunk);
    for (int64_t at = chunk.begin; at < chunk.begin + chunk.count; at += slice) {
      const ChunkRange piece{at, std::min(slice, chunk.begin + chunk.count - at)};
      if (m.receives) p_->receive(m, piece);
      // The slice is final here: the hook's one call site (Note [Sharded update]).
      if (op.final_reduce() && update) update->apply_to(piece.begin, piece.count);
      if (op.forward) p_->send(m, piece);
    }
    if (m.receives) p_->end_step(m);
    if (op.final_reduce()) phase_switch_ = std::chrono::steady_clock::now();
  }
  p_->end();
}

}  // namespace rt
