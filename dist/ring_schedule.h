// The ring-allreduce schedule, as pure functions: which chunk each rank sends and receives at each
// step, and whether it reduces or copies what it receives. No communication happens here; the
// same functions drive the trainer's ring, the tests' simulated ranks and `ring-demo`.
//
// Note [Ring schedule]
// A buffer of `count` elements is cut into `world` chunks (the first count % world chunks one
// element longer). Rank r sends to r+1 and receives from r-1 (mod world). There are 2(world-1)
// steps:
//   Phase 1, reduce-scatter, steps s = 0 .. world-2: rank r sends chunk (r - s) and receives
//     chunk (r - s - 1), adding it into its own copy. After the phase, rank r holds the complete
//     sum of chunk (r + 1).
//   Phase 2, all-gather, steps s = world-1 .. 2(world-1)-1: with t = s - (world-1), rank r sends
//     chunk (r + 1 - t) and receives chunk (r - t), overwriting its copy with the finished sum.
// Each rank therefore sends and receives 2(world-1)/world of the buffer, whatever world is.
// With a float32 wire the 1/world average is applied once, by the receiver of the last
// reduce-scatter step. With a 16-bit wire each rank scales its own buffer by 1/world before the
// first send instead, and no step scales afterwards (Note [Wire scaling] in wire_format.h).
//
// Note [Sharded update]
// Between the phases, rank r alone holds the finished average of chunk (r + 1), and the all-gather
// only copies it to the others. So the optimizer can run there, on that chunk alone: each rank
// updates the parameters of the chunk it finished, and the all-gather shares updated parameters
// instead of averaged gradients. Every rank ends with the same parameters as if each had applied
// the whole update, having done 1/world of the optimizer's work (the update of ZeRO stage 1,
// Rajbhandari et al. 2019, without its memory saving). The optimizer's own state (momentum) is
// then current only in a rank's own chunks; it is shared by an all-gather alone before anyone
// reads it (a checkpoint). An update that needs every gradient before any parameter moves
// (train.clip_grad_norm's global norm) cannot run there: Trainer::attach_reducer then leaves the
// update to after the allreduce.
#pragma once

#include <cstdint>
#include <vector>

namespace rt {

struct ChunkRange {
  int64_t begin = 0;  // element offset
  int64_t count = 0;  // may be 0 when count < world
};

struct RingStep {
  int send_chunk = 0;
  int recv_chunk = 0;
  bool reduce = true;         // true: add received into own; false: overwrite own with received
  bool final_reduce = false;  // the last reduce-scatter step (scales by 1/world on a float32 wire)
};

inline int ring_next(int rank, int world) { return (rank + 1) % world; }
inline int ring_prev(int rank, int world) { return (rank + world - 1) % world; }
inline int ring_step_count(int world) { return 2 * (world - 1); }
// The chunk whose finished average rank r holds after the reduce-scatter.
inline int owned_chunk(int rank, int world) { return (rank + 1) % world; }

ChunkRange chunk_range(int64_t count, int world, int chunk);
// Where one chunk of the `world` ends and the next begins, inside (0, count), ascending, each once.
// Added to `into`, each shifted by `base`.
void chunk_cuts(int64_t count, int world, int64_t base, std::vector<int64_t>& into);
// step in [0, ring_step_count(world)).
RingStep ring_step(int rank, int world, int step);

// Note [Ring primitives]
// The schedule as one rank's sequence of operations, each on one chunk, in the shape of NCCL's
// runRing: a send opens the ring, then every step is one receive that reduces or copies what it
// gets and, unless it is the last of the run, sends it on (the chunk a rank receives at step s is
// the chunk it sends at step s + 1, Note [Ring schedule]):
//   send                   the first step's chunk
//   recv_reduce_send       reduce-scatter: add in, forward the partial sum
//   recv_reduce_copy_send  the last reduce-scatter step: add in and scale; the sum is final here,
//                          so the finished-slice hook (Note [Sharded update]) runs on it, and what
//                          is forwarded is the result (the average, or the updated parameters)
//   recv_copy_send         all-gather: keep a finished chunk, forward it
//   recv                   the last all-gather step: keep it
// A run of the reduce-scatter alone ends with recv_reduce_copy_send that does not forward. The ring
// executor (ring_executor.h) interprets this list; transports and exchanges implement the receive
// and the send only (RingPrimitives).
enum class RingOpKind { kSend, kRecvReduceSend, kRecvReduceCopySend, kRecvCopySend, kRecv };

struct RingOp {
  RingOpKind kind = RingOpKind::kSend;
  int chunk = 0;         // received (kSend: sent)
  bool forward = false;  // a receive that sends its chunk on
  bool partial = false;  // what it sends is a partial sum (the reduce-scatter's), not a finished chunk
  bool reduce() const { return kind == RingOpKind::kRecvReduceSend || kind == RingOpKind::kRecvReduceCopySend; }
  bool final_reduce() const { return kind == RingOpKind::kRecvReduceCopySend; }
};

// Steps [first, end) as operations: first is 0 (from the start) or world - 1 (the all-gather
// alone), end is world - 1 (the reduce-scatter alone) or ring_step_count(world).
std::vector<RingOp> ring_ops(int rank, int world, int first, int end);

}  // namespace rt
