// Note [PowerSGD buckets]: PowerSGD (Note [PowerSGD] in dist/powersgd.h) on the GradReducer's
// buckets, as PyTorch's powerSGD_hook works on DDP's. A bucket that holds a compressed tensor is
// averaged in two rounds of the same collective instead of one: first its uncompressed tensors
// together with every compressed tensor's P, then every compressed tensor's Q. The bucket plan,
// the launch order and the overlap with backward stay the plain ones, and the rounds go through
// the ring as any bucket does (its wire, its two levels, its stall watch). Steps before
// `start_step` average every bucket plainly (PyTorch's start_powerSGD_iter).
// Errors are kept for compressed tensors only. PyTorch keeps one for every element of a bucket;
// an uncompressed tensor's is M minus the average of M, which sums to zero over ranks, so it moves
// the next average by rounding alone.
#pragma once

#include <cstdint>
#include <vector>

#include "dist/bucket_plan.h"
#include "dist/collective.h"
#include "dist/grad_hook.h"
#include "dist/powersgd.h"
#include "dist/timeline.h"

namespace rt {

struct PowerSgdOptions {
  int64_t rank = 4;        // dist.powersgd_rank
  double min_ratio = 2;    // dist.powersgd_min_ratio
  int64_t start_step = 0;  // dist.powersgd_start_step: steps 0 .. start_step - 1 are plain
  uint64_t seed = 0;       // the first Q's, the same on every rank
};

// What one bucket costs a compressed step: the floats of its first average (all of them where
// it holds no compressed tensor) and of its second (its Q's), and its compressed tensors' elements
// (the sum of n m) and elements times rank (of n m k), which the products' cost follows.
struct PowerSgdRounds {
  int64_t first_floats = 0, second_floats = 0;
  int64_t elements = 0, element_ranks = 0;
};
std::vector<PowerSgdRounds> powersgd_rounds(const std::vector<ParamExtent>& params,
                                            const std::vector<std::vector<int64_t>>& shapes,
                                            const std::vector<Bucket>& buckets, const PowerSgdOptions& options);

// The floats a rank hands the collective in a step over `buckets`: every bucket plainly, and
// with the buckets that hold compressed tensors sent as their other tensors, P's and Q's.
struct PowerSgdFloats {
  int64_t plain = 0, compressed = 0;
};
PowerSgdFloats powersgd_floats(const std::vector<ParamExtent>& params, const std::vector<std::vector<int64_t>>& shapes,
                               const std::vector<Bucket>& buckets, const PowerSgdOptions& options);

// Note [PowerSGD on the GPU]: the same plan, state layout and average() with the phases on a GPU,
// a subclass (dist/cuda/device_powersgd.cu) that overrides the phases below to enqueue them on the
// collective's communication stream; tensors()' errors and Q's are then the host's copies, brought
// up to date by state_to_host() before a save and sent back by state_from_host() after a load.
class PowerSgdBuckets : public GradHook {
 public:
  // One compressed tensor: where its gradient lies in the arena, its matrix, this rank's error
  // (n x m, row-major) and the Q carried from step to step (k x m: its columns one after another).
  struct Tensor {
    size_t param = 0;
    int64_t offset = 0;
    PowerSgdMatrix matrix;
    std::vector<float> error, q;
  };

  // params and shapes in arena order (shapes[i]: parameter i's tensor shape), buckets as the
  // GradReducer's. The first Q's are uniform in [-0.5, 0.5) from options.seed: the same on every
  // rank without a message.
  PowerSgdBuckets(const std::vector<ParamExtent>& params, const std::vector<std::vector<int64_t>>& shapes,
                  const std::vector<Bucket>& buckets, const PowerSgdOptions& options);
  ~PowerSgdBuckets() override = default;
  PowerSgdBuckets(const PowerSgdBuckets&) = delete;
  PowerSgdBuckets& operator=(const PowerSgdBuckets&) = delete;

  // Whether bucket `bucket` of step `step` (from 0) is averaged by average() rather than plainly.
  bool compresses(size_t bucket, int64_t step) const;
  // Averages bucket `bucket` of `arena` in its two rounds of `collective`, updating this rank's
  // errors and the carried Q's. Every rank ends with the same bits (Note [PowerSGD]). With a
  // timeline, each phase is a span on the communication row: the products ("P = M Q",
  // "Q = M^T P", "P Q^T", category "powersgd") and the rounds ("average P", "average Q", "ring").
  virtual void average(float* arena, size_t bucket, Collective& collective, const WaitContext& context,
                       Timeline* timeline = nullptr);
  // The reducer's hook (Note [Gradient hooks]): the buckets compresses() names by average(), the
  // others plainly.
  PhaseSwitch average_bucket(float* arena, size_t index, const Bucket& bucket, int64_t step, Collective& collective,
                             const WaitContext& context, Timeline* timeline) override;
  std::optional<double> error() const override { return error_relative_norm(); }
  const char* error_key() const override { return "powersgd_error"; }
  std::string describe(size_t tensors) const override;
  // Where the live state is elsewhere (a GPU's): tensors()' copies from it, and back. Between steps.
  virtual void state_to_host() {}
  virtual void state_from_host() {}
  // After a save: the host's copies may go where they are copies (a GPU's state's).
  virtual void release_host_state() {}

  const std::vector<Tensor>& tensors() const { return tensors_; }
  std::vector<Tensor>& tensors() { return tensors_; }
  // Floats a rank hands the collective in a step: every bucket plainly, and with compression.
  int64_t plain_floats() const { return floats_.plain; }
  int64_t compressed_floats() const { return floats_.compressed; }
  int64_t floats_at(int64_t step) const override { return step >= start_step_ ? floats_.compressed : floats_.plain; }
  // ||M - P Q^T|| / ||M|| over this rank's compressed tensors, each bucket's as its last
  // compressed step left it; 0 before any. Read between steps.
  virtual double error_relative_norm() const;

 protected:
  struct Plan {
    std::vector<ParamExtent> plain;  // the bucket's uncompressed tensors
    std::vector<size_t> tensors;     // indices into tensors_
    int64_t plain_count = 0, p_count = 0, q_count = 0;
    double error_squares = 0, m_squares = 0;  // at its last compressed step
  };
  const std::vector<Plan>& plans() const { return plans_; }
  // The largest first and second rounds of a compressed bucket, in floats.
  int64_t first_round_floats() const { return first_round_floats_; }
  int64_t second_round_floats() const { return second_round_floats_; }

  // average()'s phases, here on this process's memory; `tensor` indexes tensors(). A subclass
  // whose state lives elsewhere overrides them all.
  virtual float* first_round();   // plain tensors then P's, first_round_floats()
  virtual float* second_round();  // Q's, second_round_floats()
  virtual void copy(float* to, const float* from, int64_t floats);
  virtual void compress(size_t tensor, const float* grad, float* p);  // error += grad, p = M q
  virtual void project(size_t tensor, float* p, float* q_local);      // p orthonormal, M^T p
  virtual void decompress(size_t tensor, size_t bucket, const float* p, const float* q, float* grad);
  virtual void carry_q(size_t tensor, const float* q);  // the averaged Q, for the next step

 private:
  int64_t start_step_, rank_;
  std::vector<Tensor> tensors_;
  std::vector<Plan> plans_;  // per bucket; no tensors where the bucket is averaged plainly
  int64_t first_round_floats_ = 0, second_round_floats_ = 0;
  std::vector<float> first_round_, second_round_;  // allocated at the first use
  PowerSgdFloats floats_;
};

}  // namespace rt
