// How a Trainer is built, in the constructor's order: threads and device, this rank's data, the
// model planned on its device, the checks that every rank agrees, the learning-rate schedule, and
// (on several ranks) the gradient reducer. The loops that use all this are in trainer.cpp.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>

#include "app/config_model.h"
#include "app/consistency.h"
#include "app/gradient_buckets.h"
#include "app/image_options.h"
#include "app/recipe_summary.h"
#include "app/sharded_update.h"
#include "app/thread_split.h"
#include "app/trainer.h"
#include "base/check.h"
#include "base/stderr_line.h"
#include "base/test_fault.h"
#include "data/indexed_image_batches.h"
#include "data/sample_index.h"
#include "data/sampler.h"
#include "data/shard_index.h"
#include "dist/cuda/device_collective.h"
#include "dist/gpu_choice.h"
#include "models/registry.h"
#include "nn/ops/add.h"

namespace rt {
namespace {

std::string data_path(const DataConfig& d, const std::string& file) {
  return (std::filesystem::path(d.dir) / file).string();
}

// data.source = "imagefolder", "shards" or "tfrecord": the training or evaluation set (its index), its
// transforms from the config.
std::unique_ptr<BatchSource> open_image_folder(const DataConfig& d, ImageIndex index, const std::string& model,
                                               Device device, bool training, uint64_t seed, int workers,
                                               std::function<void(const std::string&)> warn) {
  ImageBatchOptions o;
  o.sample = image_sample_options(d, model);
  o.training = training;
  o.seed = seed;
  o.workers = workers;
  o.prefetch = static_cast<int>(d.prefetch);
  o.error_on_bad_file = d.on_bad_file == BadFilePolicy::kError;
  o.label_offset = d.label_offset;
  // Note [Lent batches]: the workers write each batch into page-locked memory where the device
  // reads it (plain memory on the CPU), and the step borrows that slot: no copy of the batch on
  // the step's thread (38.5 MB at ResNet-50's batch of 64).
  o.allocate = [device](size_t bytes) { return allocate_host_staging(device, bytes); };
  o.warn = std::move(warn);
  return std::make_unique<IndexedImageBatches>(std::move(index), std::move(o));
}

// A warning from this rank on stderr, named by its rank and host.
std::function<void(const std::string&)> rank_warning(const World& world) {
  return [&world](const std::string& m) { stderr_line(str_cat(world.tag(), "ringtrain: warning: ", m)); };
}

// dist.stall_warn_s and dist.stall_abort_s: a warning on this rank, then the job taken down.
StallPolicy stall_policy(const DistConfig& dc, const World& world, StallPolicy::Idle idle) {
  return StallPolicy{dc.stall_warn_s, dc.stall_abort_s, rank_warning(world),
                     [&world](const std::string& m) { world.abort(m); }, idle};
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
                                  world.oversubscribed() ? StallPolicy::Idle::kYield : StallPolicy::Idle::kSpin)),
      save_policy_(config_.checkpoint, config_.train.epochs, world, &between_steps_) {
  // Ranks share the CPUs their masks and cgroups give them (oversubscribed compute threads are
  // the classic slowdown); the machine's core count says nothing about either.
  const ThreadSplit split =
      split_threads(world.cpu_share().cpus, config.train.device, config.train.threads, config.data.workers);
  omp_set_num_threads(split.compute);
  check_rules(config);  // a config made in code, not loaded (tests)
  // Before any collective the config decides (the GPU's choice, train.bn_group's group, the
  // ring's transport): ranks told different things would otherwise wait in different calls.
  require_same_on_all_ranks("config key", config_items(resolved_), world);
  const Device device = config.train.device;
  if (device == Device::kCuda) {
    // Before any other CUDA call: one GPU per rank.
    gpu_ =
        choose_gpu(world.local_rank(), world.local_size(), visible_cuda_devices(), std::getenv("CUDA_VISIBLE_DEVICES"));
    select_cuda_device(gpu_.index);
    const std::string shared = shared_gpu(world.allgather(world.host()), world.allgather(cuda_device_uuid()));
    RT_CHECK(shared.empty(), shared);
  }
  PlanContext plan_context{config.train.conv_algorithm, config.train.precision, config.train.cudnn_graph, nullptr};
  const PlanContext eval_context = plan_context;  // evaluation normalises with the running statistics
  if (config.train.bn_group > 1) plan_context.bn_group = &make_bn_group();

  open_data(split.decoding);
  inject_fault("open_data", world.rank());
  graph_ = build_config_model(config, input_shape_);
  // Made before planning: on the CPU the gradient arena is the collective's memory.
  std::unique_ptr<Collective> collective = world.size() > 1 ? make_rank_collective(device) : nullptr;
  inject_fault("collective", world.rank());
  graph_->plan(config.train.batch_per_rank, device, /*training=*/true, plan_context);
  inject_fault("plan", world.rank());
  graph_->init_parameters(static_cast<uint64_t>(config.train.seed));
  dy_ = std::make_unique<OutputGradients>(*graph_);
  step_loss_ = std::make_unique<StepLoss>(*graph_);
  if (!synthetic_) {
    eval_graph_ = build_config_model(config, input_shape_);
    eval_graph_->plan(config.eval.batch, device, /*training=*/false, eval_context);
  }
  optimizer_ = make_optimizer(
      config.train.optimizer, *graph_,
      OptimizerOptions{config.train.momentum, config.train.nesterov, config.train.weight_decay,
                       config.train.decay_bias_and_bn, config.train.trust_coefficient, config.train.lars_epsilon});
  loss_scaling_ = make_loss_scaling(plan_context.precision);

  require_same_on_all_ranks("model tensor", model_items(*graph_), world);
  broadcast_model_state(*graph_, world);

  plan_schedule();
  if (!config.log.timeline.empty())
    timeline_ = std::make_unique<Timeline>(config.log.timeline, world, config.log.timeline_first_step,
                                           config.log.timeline_steps,
                                           static_cast<int64_t>(config.log.timeline_max_mb * 1024 * 1024));
  if (collective) attach_reducer(std::move(collective));
  if (config.train.accumulate_steps > 1) accumulate_gradients();
  replay_ = CudaGraphReplay(config.train.cuda_graph, /*with_backward=*/reducer_ == nullptr);
  inject_fault("reducer", world.rank());
  if (world.rank() == 0) print_start(split);
}

// Note [One index per job]: rank 0 alone reads a folder's index from its cache, or lists the
// folder and writes the cache, and hands the index to the other ranks. A file system then sees one
// listing of 1.28 M files per job, not one per rank; no two ranks race to write one cache; and
// every rank samples from the same list, even if files change while the job starts.
// Shards are indexed the same way (their offsets, not a listing).
ImageIndex Trainer::shared_index(const std::string& root) {
  const DataSource source = config_.data.source;
  ImageIndex index;
  if (world_.size() == 1) {
    index = load_index(source, root, config_.data.rebuild_index);
  } else {
    std::string text;
    if (world_.rank() == 0) {
      index = load_index(source, root, config_.data.rebuild_index);
      text = index_text(index);
    }
    world_.broadcast(text, 0, watched(str_cat("rank 0's index of ", root)));
    if (world_.rank() != 0) index = index_from_text(source, root, text);
  }
  if (index.records()) leave_out_labels_from(index, config_.model.num_classes);
  // What indexing left out: every rank stops alike, or rank 0 alone names each once.
  const DataConfig& d = config_.data;
  if (!index.left_out.empty() && d.on_bad_file == BadFilePolicy::kError)
    throw Error(str_cat(index.left_out[0], " (data.on_bad_file = \"error\"; \"skip\" goes on without it)"));
  if (world_.rank() == 0)
    for (const std::string& why : index.left_out) rank_warning(world_)(str_cat("left out of the index: ", why));
  return index;
}

void Trainer::open_data(int workers) {
  const DataConfig& d = config_.data;
  synthetic_ = d.source == DataSource::kSynthetic;
  if (synthetic_) {
    input_shape_ = usual_input(config_);
    return;
  }
  if (decodes_images(d.source)) {
    train_ =
        open_image_folder(d, shared_index(data_path(d, d.train_folder)), config_.model.name, config_.train.device,
                          /*training=*/true, static_cast<uint64_t>(config_.train.seed), workers, rank_warning(world_));
    test_ = open_image_folder(d, shared_index(data_path(d, d.val_folder)), config_.model.name, config_.train.device,
                              /*training=*/false, 0, workers, rank_warning(world_));
  } else {
    train_ = std::make_unique<InMemoryBatches>(
        load_idx_dataset(data_path(d, d.train_images), data_path(d, d.train_labels), d.mean, d.std));
    test_ = std::make_unique<InMemoryBatches>(
        load_idx_dataset(data_path(d, d.test_images), data_path(d, d.test_labels), d.mean, d.std));
  }
  const int64_t classes = std::max(train_->num_classes(), test_->num_classes());
  RT_CHECK(classes <= config_.model.num_classes, "the data in '", d.dir, "' has ", classes,
           " classes but model.num_classes = ", config_.model.num_classes);
  const auto [c, h, w] = train_->sample_shape();
  input_shape_ = {c, h, w};
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
  const StallPolicy stall = stall_policy(dc, world_, StallPolicy::Idle::kSleep);
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
  schedule_.base = scaled_lr(t.lr_per_256, t.batch_per_rank * t.accumulate_steps * world_.size());
  schedule_.warmup_steps = in_steps(s.warmup_epochs);
  for (double m : s.milestones) schedule_.milestones.push_back(in_steps(m));
  schedule_.factor = s.factor;
  schedule_.final_fraction = s.final_fraction;
  schedule_.power = s.power;
  schedule_.total_steps = steps_per_epoch_ * t.epochs;
  position_.seed = t.seed;
}

void Trainer::attach_reducer(std::unique_ptr<Collective> collective) {
  const DistConfig& dc = config_.dist;
  GradientBuckets plan = plan_gradient_buckets(*graph_, dc);
  // Norms in the same pieces, sharded or not, so that both paths agree bit for bit.
  cut_at_collective_parts(*optimizer_, plan.buckets, *collective);
  std::optional<ShardUpdate> update;
  if (dc.sharded_update)
    update = make_sharded_update(*optimizer_, *graph_, *collective, config_.train.clip_grad_norm > 0, world_,
                                 stall_policy(dc, world_, StallPolicy::Idle::kSleep), &lr_);
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

void Trainer::print_start(const ThreadSplit& split) const {
  const Config& config = config_;
  const Device device = graph_->device();
  out_ << "ringtrain: model " << config.model.name << " (" << graph_->parameter_count() << " parameters), ";
  if (synthetic_)
    out_ << "synthetic images of " << shape_str(input_shape_);
  else
    out_ << train_->count() << " training / " << test_->count() << " test images of " << shape_str(input_shape_);
  out_ << ", " << name_of(device);
  if (device == Device::kCuda)
    out_ << " (rank 0: " << gpu_.how << ") in " << name_of(config.train.precision)
         << (loss_scaling_->state() ? " with dynamic loss scaling" : "");
  if (config.train.cuda_graph) out_ << ", steps after the first replayed as a CUDA graph (" << replayed_work() << ")";
  out_ << "\n"
       << "ringtrain: world " << world_.size() << " rank(s)" << (world_.uses_mpi() ? " over MPI" : "") << ", "
       << split.compute << " compute threads per rank ("
       << (config.train.threads > 0    ? split.compute_how
           : split.compute_how.empty() ? world_.cpu_share().how
                                       : str_cat(split.compute_how, "; ", world_.cpu_share().how))
       << ")"
       << (decodes_images(config.data.source)
               ? str_cat(", ", split.decoding, " decoding threads (", split.decoding_how, ")")
               : std::string())
       << ", global batch " << config.train.batch_per_rank * config.train.accumulate_steps * world_.size() << " ("
       << config.train.batch_per_rank << " per rank"
       << (config.train.accumulate_steps > 1
               ? str_cat(" x ", config.train.accumulate_steps, " micro-batches, gradients summed before one allreduce")
               : std::string())
       << "), learning rate " << schedule_.base << " (" << config.train.lr_per_256 << " per 256 images), "
       << steps_per_epoch_ << " steps per epoch\n";
  if (config.train.clip_grad_norm > 0)
    out_ << "ringtrain: gradients clipped to global norm " << config.train.clip_grad_norm << "\n";
  if (config.train.bn_group > 1)
    out_ << "ringtrain: batch-norm statistics pooled over groups of " << config.train.bn_group
         << " ranks (train.bn_group), " << config.train.batch_per_rank * config.train.bn_group << " images each, "
         << (device == Device::kCuda ? "over NCCL" : "over shared memory") << "\n";
  out_ << "ringtrain: optimizer " << optimizer_summary(config.train) << "\n";
  if (reducer_)
    out_ << "ringtrain: gradients averaged by " << reducer_->collective().describe() << " in "
         << reducer_->buckets().size() << " bucket(s), " << (config.dist.overlap ? "overlapped with" : "after")
         << " backward"
         << (reducer_->updates_parameters() ? str_cat(", ", optimizer_->name(), " sharded across ranks") : "") << "\n";
}

}  // namespace rt
