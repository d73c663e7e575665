// How a Trainer is built, in the constructor's order: threads and device, this rank's data
// (trainer_data.cpp), the model planned on its device, the checks that every rank agrees, the
// learning-rate schedule, and (on several ranks) the gradient reducer. The loop that uses all this
// is the run's (app/run/training_run.cpp); what rank 0 prints at start, in start_banner.cpp.
#include <omp.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <ostream>

#include "app/checkpoint.h"
#include "app/config_model.h"
#include "app/consistency.h"
#include "app/cpu_precision.h"
#include "app/finetune.h"
#include "app/gradient_accumulation.h"
#include "app/grad_hook_choice.h"
#include "app/gradient_buckets.h"
#include "app/rank_warning.h"
#include "app/sharded_update.h"
#include "app/start_banner.h"
#include "app/thread_split.h"
#include "app/trainer.h"
#include "base/check.h"
#include "config/batch_shape.h"
#include "base/test_fault.h"
#include "dist/cuda/device_collective.h"
#include "dist/gpu_choice.h"
#include "dist/timeline.h"

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

// log.timeline: a Chrome-trace window of steps (dist/timeline.h).
std::unique_ptr<Timeline> make_timeline(const LogConfig& log, const World& world) {
  return std::make_unique<Timeline>(log.timeline, world, log.timeline_first_step, log.timeline_steps,
                                    static_cast<int64_t>(log.timeline_max_mb * 1024 * 1024));
}

// Before any other CUDA call: one GPU per rank, and no two ranks on one.
GpuChoice take_gpu(const World& world) {
  const GpuChoice gpu =
      choose_gpu(world.local_rank(), world.local_size(), visible_cuda_devices(), std::getenv("CUDA_VISIBLE_DEVICES"));
  select_cuda_device(gpu.index);
  const std::string shared = shared_gpu(world.allgather(world.host()), world.allgather(cuda_device_uuid()));
  RT_CHECK(shared.empty(), shared);
  return gpu;
}

// train.* as planning reads it, the batch-norm group made into `bn_group` (`step`: the step under way).
PlanContext training_plan_context(const Config& config, const World& world, const StallPolicy& stall,
                                  RankBnGroup& bn_group, const int64_t* step) {
  const TrainConfig& t = config.train;
  PlanContext context{t.conv_algorithm, t.precision, t.cudnn_graph, nullptr};
  if (t.bn_group > 1) {
    make_rank_bn_group(bn_group, config, world, stall, step);
    context.bn_group = &bn_group.group;
  }
  return context;
}

// On several ranks, the gradients' collective, made before `graph` is planned: on the CPU its
// memory is the gradient arena.
std::unique_ptr<Collective> make_rank_collective(const Config& config, const World& world,
                                                 const std::vector<std::string>& hosts, Graph& graph) {
  const DistConfig& dc = config.dist;
  // The compute threads fill this rank's cores, and a spinning communication thread would take its
  // core from them during backward.
  const StallPolicy stall = stall_policy(dc, world, StallPolicy::Idle::kSleep, hosts);
  // On the GPU the same policy watches each bucket's work (Note [GPU watchdog]).
  const CollectiveSpec spec{dc.allreduce, dc.transport, dc.tcp_interface, dc.hierarchy, dc.wire};
  if (config.train.device == Device::kCuda) return make_device_collective(spec, world.comm(), stall);
  std::unique_ptr<Collective> collective = make_collective(
      spec, world.comm(), stall, static_cast<size_t>(graph.arena_floats_to_plan() + graph.grad_floats_to_plan()));
  // The ring reads neighbours' gradients in place where it can (Note [Zero-copy pieces]).
  graph.take_arenas_from([c = collective.get()](int64_t floats) { return c->allocate(static_cast<size_t>(floats)); });
  return collective;
}

// Note [Saved parts] in app/saved_state.h: the engine's, in the checkpoint's order (the gradient
// hook's, per rank, as the reducer is made).
void register_engine_parts(SavedState& saved, const Config& config, Graph& graph, Optimizer& optimizer,
                           SavedPosition& position, LossScaling& loss_scaling) {
  saved.add("model", PartScope::kShared, std::make_unique<SavedModel>(graph, config.model.name, to_toml(config)));
  saved.add("optimizer", PartScope::kShared, std::make_unique<SavedOptimizer>(graph, optimizer));
  saved.add("position", PartScope::kShared, position);
  saved.add("loss scaling", PartScope::kShared, loss_scaling);
}

}  // namespace

Trainer::Trainer(const Config& given, std::ostream& out, const World& world)
    : config_(fit_global_batch(given, world.size())),
      out_(out),
      world_(world),
      // Between steps no compute thread needs the core; where ranks outnumber cores, the awaited
      // one may.
      between_steps_(stall_policy(config_.dist, world,
                                  world.oversubscribed() ? StallPolicy::Idle::kYield : StallPolicy::Idle::kSpin, {})),
      saved_(world) {
  const Config& config = config_;  // train.global_batch divided among this world's ranks
  // Ranks share the CPUs their masks and cgroups give them (oversubscribed compute threads are
  // the classic slowdown); the machine's core count says nothing about either.
  const ThreadSplit split =
      split_threads(world.cpu_share().cpus, config.train.device, config.train.threads, config.data.workers);
  omp_set_num_threads(split.compute);
  check_rules(config);  // a config made in code, not loaded (tests)
  // Before any collective the config decides (the GPU's choice, train.bn_group's group, the
  // ring's transport): ranks told different things would otherwise wait in different calls.
  require_same_on_all_ranks("config key", config_items(to_toml(config)), world);
  check_cpu_precision_on_all_ranks(config.train, world);
  between_steps_.hosts = world.allgather(world.host());
  const GpuChoice gpu = config.train.device == Device::kCuda ? take_gpu(world) : GpuChoice{};
  const PlanContext plan_context = training_plan_context(config, world, between_steps_, bn_group_, &position_.now.step);
  data_ = open_data(config, world, between_steps_, split.decoding);
  inject_fault("open_data", world.rank());
  std::unique_ptr<Collective> collective = build_model(plan_context);
  require_same_on_all_ranks("model tensor", model_items(*graph_), world);
  broadcast_model_state(*graph_, world);
  schedule_ = plan_schedule(config, world, data_);
  position_.now.seed = config.train.seed;
  if (!config.log.timeline.empty()) timeline_ = make_timeline(config.log, world);
  if (collective) {
    attach_reducer(std::move(collective), {config.dist.bucket_mb, config.dist.first_bucket_mb});
    between_steps_.broken_links = [this] { return reducer_->collective().links().broken; };
  }
  if (config.train.accumulate_steps > 1)
    accumulation_ = std::make_unique<GradientAccumulation>(*graph_, reducer_.get());
  replay_ = CudaGraphReplay(config.train.cuda_graph, /*with_backward=*/reducer_ == nullptr);
  register_engine_parts(saved_, config_, *graph_, *optimizer_, position_, *loss_scaling_);
  inject_fault("reducer", world.rank());
  if (world.rank() == 0) print_start(*this, split, gpu.how);
}

// The training graph planned on this rank's device with its optimizer and loss scaling, and the
// evaluation graph; returns the gradient collective on several ranks, made before planning
// because on the CPU the gradient arena is the collective's memory.
std::unique_ptr<Collective> Trainer::build_model(const PlanContext& plan_context) {
  const Config& config = config_;
  const Device device = config.train.device;
  graph_ = build_config_model(config, data_.input_shape);
  std::unique_ptr<Collective> collective =
      world_.size() > 1 ? make_rank_collective(config, world_, between_steps_.hosts, *graph_) : nullptr;
  inject_fault("collective", world_.rank());
  graph_->plan(config.train.batch_per_rank, device, /*training=*/true, plan_context);
  inject_fault("plan", world_.rank());
  graph_->init_parameters(static_cast<uint64_t>(config.train.seed));
  scale_head_rate(*graph_, config.finetune.head_lr_scale);
  head_ = std::make_unique<LossHead>(*graph_);
  if (!data_.synthetic) {
    // Evaluation normalises with the running statistics: no batch-norm group.
    PlanContext eval_context = plan_context;
    eval_context.bn_group = nullptr;
    eval_graph_ = build_config_model(config, data_.input_shape);
    eval_graph_->plan(config.eval.batch, device, /*training=*/false, eval_context);
  }
  optimizer_ = make_optimizer(config.train.optimizer, *graph_, optimizer_options(config.train));
  loss_scaling_ = make_loss_scaling(plan_context.precision);
  return collective;
}

void Trainer::attach_reducer(std::unique_ptr<Collective> collective, const BucketCaps& caps) {
  DistConfig dc = config_.dist;
  dc.bucket_mb = caps.bucket_mb;
  dc.first_bucket_mb = caps.first_bucket_mb;
  GradientBuckets plan = plan_gradient_buckets(*graph_, dc);
  // Norms in the same pieces, sharded or not, so that both paths agree bit for bit.
  cut_at_collective_parts(*optimizer_, plan.buckets, *collective);
  GradHookChoice hook = choose_grad_hook(config_, plan, *graph_, position_.resumed);
  std::optional<ShardUpdate> update;
  if (dc.sharded_update && !hook.hook)  // a hook's bucket is final only after all its rounds
    update = make_sharded_update(*optimizer_, *graph_, *collective,
                                 config_.train.clip_grad_norm > 0 || config_.train.precision == Precision::kFp16,
                                 world_, stall_policy(dc, world_, StallPolicy::Idle::kSleep, between_steps_.hosts),
                                 &schedule_.lr, &position_.now.step);
  reducer_ = std::make_unique<GradReducer>(graph_->grad_arena(), std::move(plan.params), std::move(plan.buckets),
                                           std::move(collective), dc.overlap, timeline_.get(), std::move(update),
                                           std::move(hook.hook), caps);
  graph_->on_grad_ready([this](size_t i) { reducer_->on_grad_ready(i); });
  if (hook.state) saved_.add("gradient hook", PartScope::kPerRank, std::move(hook.state));
}

void Trainer::use_bucket_caps(const BucketCaps& caps) {
  if (!reducer_ || caps == bucket_caps()) return;
  RT_CHECK(!fixes_buckets(config_.dist.compression),
           "the gradient buckets cannot change under dist.compression = \"powersgd\": its "
           "errors and Q's follow the buckets it was made with");
  // Each rank holds its own parts of the momentum under a sharded update; the new buckets part it
  // otherwise.
  gather_optimizer_state();
  accumulation_.reset();  // its hook holds the reducer
  attach_reducer(reducer_->release_collective(), caps);
  if (config_.train.accumulate_steps > 1)
    accumulation_ = std::make_unique<GradientAccumulation>(*graph_, reducer_.get());
}

}  // namespace rt
