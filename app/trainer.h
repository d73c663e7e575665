// What makes the steps of one rank (Note [The run and the engine] in app/run/training_run.h): data
// (this rank's shard), model, optimizer and schedule built from a resolved Config; gradients
// averaged across ranks by the GradReducer; evaluation; the state a checkpoint needs made whole,
// and its parts (Note [Saved parts] in app/saved_state.h).
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "app/cuda_graph_replay.h"
#include "app/loss_scaling.h"
#include "app/rank_bn_group.h"
#include "app/saved_state.h"
#include "app/step_clock.h"
#include "app/trainer_data.h"
#include "app/training_position.h"
#include "app/training_schedule.h"
#include "base/bucket_caps.h"
#include "dist/grad_reducer.h"
#include "nn/graph_loss.h"
#include "nn/optim/clip_grad_norm.h"
#include "nn/optim/optimizer.h"

namespace rt {

class GradientAccumulation;

struct EvalResult {
  double loss = 0;
  double top1 = 0;  // fractions in [0, 1], over the whole test set (all ranks' shards)
  double top5 = 0;
  int64_t samples = 0;
};

// What a step did: its loss (the micro-batches' mean) and hits, and where its time went, for the
// run's tallies (Note [Naming the straggler] in app/run/straggler_report.h).
struct StepOutcome : LossResult {
  double compute_s = 0;        // batch in to last gradient ready, the waits for data left out
  double averages_wait_s = 0;  // then, the wait for the step's averages
  Links links;                 // the collective's (receive times so far); none on one rank
  // What this rank handed the collective (0 on one rank), and where the gradient hook averages
  // approximately (a compression), its error, under the metric record's key it names (Note
  // [Gradient hooks] in dist/grad_hook.h).
  int64_t averaged_bytes = 0;
  std::optional<double> averaging_error;
  const char* averaging_error_key = "";
};

class Trainer {
 public:
  // `out` receives the human-readable log (rank 0 prints progress; other ranks only warnings).
  // Loads data, builds the model, and (on several ranks) broadcasts rank 0's weights and checks
  // that config and model agree everywhere. Writes no files. config() is `config` with
  // train.global_batch divided among the world's ranks (Note [Fixed global batch] in
  // config/batch_shape.h).
  Trainer(const Config& config, std::ostream& out, const World& world);
  ~Trainer();

  // Continues from DIR's newest checkpoint (app/checkpoint_files.h), every registered part loaded,
  // at the step it was saved after, possibly inside an epoch and at another world size (Note
  // [Resuming inside an epoch]). Every rank calls it.
  void resume(const std::string& dir);
  // Makes the state whole (the sharded optimizer state gathered, the replicas checked, batch-norm
  // statistics averaged for the file) and saves every registered part as a checkpoint of the
  // current position; the ranks' live state is as before (Note [Checkpoint files]). Every rank
  // calls it; rank 0 returns the path.
  std::string save();
  // Where a part of the run's registers (Note [Saved parts]).
  SavedState& saved_state() { return saved_; }
  // Top-1/top-5 and mean loss on the test set, sharded over ranks, with running batch-norm
  // statistics averaged over ranks first.
  EvalResult evaluate();
  // One micro-batch: B images, plain NCHW in `on`'s memory, and B labels in host memory.
  struct MicroBatch {
    const float* images = nullptr;
    const int32_t* labels = nullptr;
    Device on = Device::kCpu;
  };
  // One optimizer step on this rank's K = train.accumulate_steps micro-batches, `next(k)` handing
  // out the k-th: forward, the loss of every output and backward for each, their gradients summed
  // (Note [Gradient accumulation]); buckets allreduced as the last backward fills them, and SGD at
  // the schedule's rate (sharded across ranks inside the allreduce where dist.sharded_update,
  // else after it). The loss is the micro-batches' mean. Every rank calls it the same number of
  // times.
  StepOutcome train_step(const std::function<MicroBatch(int64_t k)>& next);
  // The same, with this one batch as every micro-batch (bench's fixed batch; tests).
  StepOutcome train_step(const float* images, const int32_t* labels, Device images_on = Device::kCpu);
  // Makes the optimizer state whole on every rank after sharded updates (Note [Sharded update]):
  // save() does, and a run when it ends. Every rank calls it.
  void gather_optimizer_state();
  // Note [Replica check] after a step, where dist.check_replicas_every_steps divides the steps
  // done (several ranks only). Every rank calls it after each train_step: the run does, and bench.
  void check_replicas_after_step();
  // While `times` is set, train_step waits for the device between phases and around every layer's
  // backward, and adds where the time went to *times. Null: off.
  void profile_steps(StepTimes* times);
  // The epoch is done: the position counts it, its samples cleared (the run).
  void end_epoch();
  // From the next step on, gradients travel in buckets cut at `caps` (dist.bucket_mb and
  // dist.first_bucket_mb; Note [Online bucket tuning] in app/run/bucket_tuner.h): the reducer is made
  // anew over the same collective, after the sharded update's state is made whole. The config
  // keeps the caps it gave. Every rank calls it between steps with the same caps.
  void use_bucket_caps(const BucketCaps& caps);
  // In force now: the reducer's, else (one rank) the config's.
  BucketCaps bucket_caps() const {
    return reducer_ ? reducer_->caps() : BucketCaps{config_.dist.bucket_mb, config_.dist.first_bucket_mb};
  }

  const Config& config() const { return config_; }
  const World& world() const { return world_; }
  std::ostream& out() const { return out_; }
  const TrainingPosition& position() const { return position_.now; }
  const std::optional<TrainingPosition>& resumed_from() const { return position_.resumed; }  // as resume() loaded it
  TrainerData& data() { return data_; }
  const TrainingSchedule& schedule() const { return schedule_; }
  Graph& graph() { return *graph_; }
  Optimizer& optimizer() { return *optimizer_; }
  GradReducer* reducer() { return reducer_.get(); }
  Timeline* timeline() { return timeline_.get(); }
  // How a rank waits in the collectives between the ring's steps (Note [Watched collectives]):
  // dist.stall_warn_s and dist.stall_abort_s, as in the ring; its hosts are each rank's.
  const StallPolicy& between_steps() const { return between_steps_; }
  // train.clip_grad_norm: the last step's gradient norm (after averaging) and the factor it was
  // scaled by (1 where it was under the limit).
  const GradNorm& last_grad_norm() const { return grad_norm_; }
  // train.cuda_graph (Note [CUDA graph steps] in nn/device.h): what a replay covers, how many
  // train_step calls replayed it and how many recordings they took.
  const CudaGraphReplay& replay() const { return replay_; }
  // How the step scales its loss: fp16's dynamic scaler, else one that scales nothing. Mutable
  // for a run that starts from another scale than GradScaler's (tests of the back-off, through
  // load()).
  LossScaling& loss_scaling() const { return *loss_scaling_; }

 private:
  // Set-up, in the constructor's order (trainer_setup.cpp): the model and the gradient collective
  // (on several ranks, made before planning: the CPU's gradient arena is the collective's memory),
  // then the reducer that overlaps it with backward.
  std::unique_ptr<Collective> build_model(const PlanContext& plan_context);
  void attach_reducer(std::unique_ptr<Collective> collective, const BucketCaps& caps);
  // The pieces of train_step, in its order (train_step.cpp).
  RunContext begin_step();  // the step's rate, fault injection, the reducer told
  void forward_and_loss(const float* images, const int32_t* labels, Device images_on, const RunContext& ctx,
                        double loss_scale, bool replay, StepClock& clock);
  LossResult read_loss();  // once backward is issued (Note [Reading the loss] in app/train_step.cpp)
  // SGD with each gradient times grad_scale, where the reducer did not apply it.
  void update(double grad_scale, StepClock& clock);
  // Note [Replica check] at `when` ("after the save after step 12"): every rank calls it.
  void check_replicas_now(const std::string& when, bool with_momentum);
  void average_buffers();  // running batch-norm statistics, over ranks

  const Config config_;
  std::ostream& out_;
  const World& world_;
  StallPolicy between_steps_;
  StepTimes* profile_ = nullptr;
  TrainerData data_;
  RankBnGroup bn_group_;  // train.bn_group > 1: the training graph's batch-norm layers average through it
  std::unique_ptr<Graph> graph_, eval_graph_;
  // The step's loss, and the gradients of the outputs that it seeds backward with.
  struct LossHead {
    explicit LossHead(const Graph& graph) : dy(graph), loss(graph) {}
    OutputGradients dy;
    StepLoss loss;
  };
  std::unique_ptr<LossHead> head_;
  CudaGraphReplay replay_{false, false};  // train.cuda_graph; set once the reducer is known
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<LossScaling> loss_scaling_;
  std::unique_ptr<Timeline> timeline_;
  std::unique_ptr<GradReducer> reducer_;
  std::unique_ptr<GradientAccumulation> accumulation_;  // train.accumulate_steps > 1
  TrainingSchedule schedule_;
  GradNorm grad_norm_;
  SavedPosition position_;  // now, and as the checkpoint that resume() loaded said
  SavedState saved_;
};

// The step the training loop is in (for fatal-error reports): set as a step begins, -1 once its
// work is done (what fails between steps names its own step) and outside training. The Trainer
// keeps it.
int64_t current_training_step();
void set_current_training_step(int64_t step);

}  // namespace rt
