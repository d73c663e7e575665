// How a Trainer is built, in the constructor's order: threads and device, this rank's data
// (trainer_data.cpp), the model planned on its device, the checks that every rank agrees, the
// learning-rate schedule, and (on several ranks) the gradient reducer. The loop that uses all this
// is the run's (app/training_run.cpp); what rank 0 prints at start, in start_banner.cpp.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>

#include "app/config_model.h"
#include "app/consistency.h"
#include "app/gradient_buckets.h"
#include "app/rank_warning.h"
#include "app/sharded_update.h"
#include "app/thread_split.h"
#include "app/trainer.h"
#include "base/check.h"
#include "base/stderr_line.h"
#include "base/test_fault.h"
#include "data/sampler.h"
#include "dist/cuda/device_collective.h"
#include "dist/gpu_choice.h"
#include "models/registry.h"
#include "nn/ops/add.h"

namespace rt {
namespace {

// dist.stall_warn_s and dist.stall_abort_s: a warning on this rank, then the job taken down
// with a message naming the rank waited for and its host.
StallPolicy stall_policy(const DistConfig& dc, const World& world, StallPolicy::Idle idle,
                         const std::vector<std::string>& hosts) {
  StallPolicy policy{dc.stall_warn_s, dc.stall_abort_s, rank_warning(world),
                     [&world](const std::string& m) { world.abort(m); }, idle};
  policy.hosts = hosts;
  return policy;
}

}  // namespace

Trainer::Trainer(const Config& config, std::ostream& out, const World& world)
    : config_(config),
      resolved_(to_toml(config)),
      out_(out),
      world_(world),
      // Between steps no compute thread needs the core; where ranks outnumber cores, the awaited
      // one may.
      between_steps_(stall_policy(config_.dist, world,
                                  world.oversubscribed() ? StallPolicy::Idle::kYield : StallPolicy::Idle::kSpin, {})) {
  // Ranks share the CPUs their masks and cgroups give them (oversubscribed compute threads are
  // the classic slowdown); the machine's core count says nothing about either.
  const ThreadSplit split =
      split_threads(world.cpu_share().cpus, config.train.device, config.train.threads, config.data.workers);
  omp_set_num_threads(split.compute);
  check_rules(config);  // a config made in code, not loaded (tests)
  // Before any collective the config decides (the GPU's choice, train.bn_group's group, the
  // ring's transport): ranks told different things would otherwise wait in different calls.
  require_same_on_all_ranks("config key", config_items(resolved_), world);
  hosts_ = world.allgather(world.host());
  between_steps_.hosts = hosts_;
  if (config.train.device == Device::kCuda) take_gpu();
  const PlanContext plan_context = training_plan_context();
  open_data(split.decoding);
  inject_fault("open_data", world.rank());
  std::unique_ptr<Collective> collective = build_model(plan_context);
  require_same_on_all_ranks("model tensor", model_items(*graph_), world);
  broadcast_model_state(*graph_, world);
  plan_schedule();
  if (!config.log.timeline.empty())
    timeline_ = std::make_unique<Timeline>(config.log.timeline, world, config.log.timeline_first_step,
                                           config.log.timeline_steps,
                                           static_cast<int64_t>(config.log.timeline_max_mb * 1024 * 1024));
  if (collective) {
    attach_reducer(std::move(collective));
    between_steps_.broken_links = [this] { return reducer_->collective().broken_links(); };
  }
  if (config.train.accumulate_steps > 1) accumulate_gradients();
  replay_ = CudaGraphReplay(config.train.cuda_graph, /*with_backward=*/reducer_ == nullptr);
  inject_fault("reducer", world.rank());
  if (world.rank() == 0) print_start(split);
}

// Before any other CUDA call: one GPU per rank, and no two ranks on one.
void Trainer::take_gpu() {
  gpu_ =
      choose_gpu(world_.local_rank(), world_.local_size(), visible_cuda_devices(), std::getenv("CUDA_VISIBLE_DEVICES"));
  select_cuda_device(gpu_.index);
  const std::string shared = shared_gpu(world_.allgather(world_.host()), world_.allgather(cuda_device_uuid()));
  RT_CHECK(shared.empty(), shared);
}

PlanContext Trainer::training_plan_context() {
  const TrainConfig& t = config_.train;
  PlanContext context{t.conv_algorithm, t.precision, t.cudnn_graph, nullptr};
  if (t.bn_group > 1) context.bn_group = &make_bn_group();
  return context;
}

// The training graph planned on this rank's device with its optimizer and loss scaling, and the
// evaluation graph; returns the gradient collective on several ranks, made before planning
// because on the CPU the gradient arena is the collective's memory.
std::unique_ptr<Collective> Trainer::build_model(const PlanContext& plan_context) {
  const Config& config = config_;
  const Device device = config.train.device;
  graph_ = build_config_model(config, input_shape_);
  std::unique_ptr<Collective> collective = world_.size() > 1 ? make_rank_collective(device) : nullptr;
  inject_fault("collective", world_.rank());
  graph_->plan(config.train.batch_per_rank, device, /*training=*/true, plan_context);
  inject_fault("plan", world_.rank());
  graph_->init_parameters(static_cast<uint64_t>(config.train.seed));
  dy_ = std::make_unique<OutputGradients>(*graph_);
  step_loss_ = std::make_unique<StepLoss>(*graph_);
  if (!synthetic_) {
    // Evaluation normalises with the running statistics: no batch-norm group.
    PlanContext eval_context = plan_context;
    eval_context.bn_group = nullptr;
    eval_graph_ = build_config_model(config, input_shape_);
    eval_graph_->plan(config.eval.batch, device, /*training=*/false, eval_context);
  }
  optimizer_ = make_optimizer(
      config.train.optimizer, *graph_,
      OptimizerOptions{config.train.momentum, config.train.nesterov, config.train.weight_decay,
                       config.train.decay_bias_and_bn, config.train.trust_coefficient, config.train.lars_epsilon});
  loss_scaling_ = make_loss_scaling(plan_context.precision);
  return collective;
}

const BatchNormGroup& Trainer::make_bn_group() {
  const int G = static_cast<int>(config_.train.bn_group);
  if (world_.size() == 1) throw Error(statistics_group_refusal(G, block_layout(1, 1)));
  const auto step = [] { return current_training_step(); };
  if (config_.train.device == Device::kCuda) {
    const StatisticsGroupComm group = statistics_group_comm(G, world_.comm(), between_steps_);
    bn_statistics_ = make_device_statistics_group(group.comm, group.stall, step);
  } else {
    bn_statistics_ = make_statistics_group(G, world_.comm(), between_steps_, step);
  }
  bn_group_ = BatchNormGroup{G, [this](float* values, int64_t count) { bn_statistics_->average(values, count); }};
  return bn_group_;
}

std::unique_ptr<Collective> Trainer::make_rank_collective(Device device) {
  const DistConfig& dc = config_.dist;
  // The compute threads fill this rank's cores, and a spinning communication thread would take its
  // core from them during backward.
  const StallPolicy stall = stall_policy(dc, world_, StallPolicy::Idle::kSleep, hosts_);
  // On the GPU the same policy watches each bucket's work (Note [GPU watchdog]).
  const CollectiveSpec spec{dc.allreduce, dc.transport, dc.tcp_interface, dc.hierarchy, dc.wire};
  if (device == Device::kCuda) return make_device_collective(spec, world_.comm(), stall);
  std::unique_ptr<Collective> collective =
      make_collective(spec, world_.comm(), stall, static_cast<size_t>(2 * graph_->arena_floats_to_plan()));
  // The ring reads neighbours' gradients in place where it can (Note [Zero-copy pieces]).
  graph_->take_arenas_from([c = collective.get()](int64_t floats) { return c->allocate(static_cast<size_t>(floats)); });
  return collective;
}

EpochSampler Trainer::train_sampler() const {
  const TrainConfig& t = config_.train;
  // A rank's share of a step is its K micro-batches, consecutive (Note [Gradient accumulation]).
  return EpochSampler(train_->count(), t.batch_per_rank * t.accumulate_steps, static_cast<uint64_t>(t.seed),
                      world_.rank(), world_.size(), config_.data.tail);
}

void Trainer::plan_schedule() {
  const TrainConfig& t = config_.train;
  if (synthetic_) {
    // The schedule spans the benchmark's steps as if they were one epoch.
    const BenchConfig& b = config_.bench;
    steps_per_epoch_ = b.warmup_steps + b.windows * b.steps_per_window;
  } else {
    steps_per_epoch_ = train_sampler().steps_per_epoch();
  }
  const ScheduleConfig& s = config_.schedule;
  const auto in_steps = [this](double epochs) {
    return static_cast<int64_t>(std::llround(epochs * static_cast<double>(steps_per_epoch_)));
  };
  schedule_.kind = s.kind;
  schedule_.base = base_lr(t.lr, t.lr_per_256, t.batch_per_rank * t.accumulate_steps * world_.size());
  schedule_.warmup_steps = in_steps(s.warmup_epochs);
  for (double m : s.milestones) schedule_.milestones.push_back(in_steps(m));
  schedule_.factor = s.factor;
  schedule_.final_fraction = s.end_lr > 0 ? s.end_lr / schedule_.base : s.final_fraction;
  schedule_.power = s.power;
  // The decay's own length where given, else to the end of train.epochs (its cap).
  const int64_t decay = s.decay_steps > 0 ? s.decay_steps : in_steps(s.decay_epochs);
  schedule_.total_steps = decay > 0 ? schedule_.warmup_steps + decay : steps_per_epoch_ * t.epochs;
  position_.seed = t.seed;
}

void Trainer::attach_reducer(std::unique_ptr<Collective> collective) {
  const DistConfig& dc = config_.dist;
  GradientBuckets plan = plan_gradient_buckets(*graph_, dc);
  // Norms in the same pieces, sharded or not, so that both paths agree bit for bit.
  cut_at_collective_parts(*optimizer_, plan.buckets, *collective);
  std::optional<ShardUpdate> update;
  if (dc.sharded_update)
    update = make_sharded_update(*optimizer_, *graph_, *collective,
                                 config_.train.clip_grad_norm > 0 || config_.train.precision == Precision::kFp16,
                                 world_, stall_policy(dc, world_, StallPolicy::Idle::kSleep, hosts_), &lr_);
  reducer_ = std::make_unique<GradReducer>(graph_->grad_arena(), std::move(plan.params), std::move(plan.buckets),
                                           std::move(collective), dc.overlap, timeline_.get(), std::move(update));
  graph_->on_grad_ready([this](size_t i) { reducer_->on_grad_ready(i); });
}

// Note [Gradient accumulation]: the last micro-batch's backward adds each parameter's earlier sum
// into its gradient as backward finishes it, and only then hands it to the reducer.
void Trainer::accumulate_gradients() {
  grad_sum_ = Tensor(plain_spec({std::max<int64_t>(graph_->arena_floats(), 1)}, graph_->device()));
  graph_->on_grad_ready([this](size_t i) {
    if (!last_micro_batch_) return;  // no collective before the last micro-batch, as DDP's no_sync
    ParamRef& p = graph_->params()[i];
    accumulate(p.grad, Tensor(p.grad.spec(), grad_sum_.data() + p.offset, nullptr));
    if (reducer_) reducer_->on_grad_ready(i);
  });
}

}  // namespace rt
