// What a rank does with the part of a buffer it finishes averaging (Note [Sharded update] in
// ring_schedule.h): the optimizer, run by the collective inside its allreduce.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace rt {

struct ShardUpdate {
  // apply(begin, count): data[begin, begin + count) holds the final average; write `gather`'s same
  // range from it. Called in slices, covering exactly the part this rank finishes.
  std::function<void(int64_t begin, int64_t count)> apply;
  // The all-gather then shares this buffer's parts (their owners' values) instead of data's.
  float* gather = nullptr;
  // Note [Norms across shards] in nn/optim/shard_norms.h: an update that needs more than its own
  // slices (LARS's per-tensor norms) gives finish: apply then only reads data, and finish(begin,
  // count), called once per buffer [begin, begin + count) (apply's offsets) on every rank after its
  // last apply, before the all-gather sends anything, writes gather. Empty: apply writes as the
  // slices land.
  std::function<void(int64_t begin, int64_t count)> finish;
  // Where data[0] sits in apply's and finish's offsets, and in gather: a bucket's place in the
  // arena, so that one update serves every bucket (at()).
  int64_t offset = 0;
  // The timeline's name for its spans: "sharded " and the optimizer's own name.
  std::string name = "sharded update";

  // The same update for a buffer that starts `by` floats further on.
  ShardUpdate at(int64_t by) const {
    ShardUpdate u = *this;
    u.offset += by;
    return u;
  }
  void apply_to(int64_t begin, int64_t count) const { apply(offset + begin, count); }
  void finish_for(int64_t begin, int64_t count) const {
    if (finish) finish(offset + begin, count);
  }
  float* gathered() const { return gather + offset; }
};

}  // namespace rt
