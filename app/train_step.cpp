// One training step of the Trainer: forward, loss and backward of each micro-batch, the gradients
// summed and averaged across ranks, and the optimizer's update.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>

#include "app/gradient_accumulation.h"
#include "app/replica_check.h"
#include "app/trainer.h"
#include "base/check.h"
#include "base/test_fault.h"

namespace rt {
namespace {

// The smallest silent corruption, for the tests of Note [Replica check]: the lowest mantissa bit
// of the parameter in the middle of the arena.
void flip_parameter_bit(Graph& graph) {
  float* p = graph.param_arena() + graph.arena_floats() / 2;
  uint32_t bits = 0;
  copy_bytes(&bits, Device::kCpu, p, graph.device(), sizeof bits);
  bits ^= 1u;
  copy_bytes(p, graph.device(), &bits, Device::kCpu, sizeof bits);
}

}  // namespace

void Trainer::profile_steps(StepTimes* times) {
  profile_ = times;
  graph_->time_backward_layers(times ? &times->backward_s : nullptr, times ? &times->backward_host_s : nullptr);
}

StepOutcome Trainer::train_step(const float* images, const int32_t* labels, Device images_on) {
  return train_step([&](int64_t) { return MicroBatch{images, labels, images_on}; });
}

// Note [Gradient accumulation]
// train.accumulate_steps = K makes one optimizer step of K micro-batches, as PyTorch's recipe of K
// backward passes (DDP's no_sync on all but the last) and one optimizer.step(). Each micro-batch's
// loss gradient is scaled by 1/K, so the summed gradients are the mean over the K x B images. The
// backward passes before the last tell the reducer nothing; their sum goes to the GradientAccumulation. In the
// last, each parameter's sum is added into its gradient the moment backward finishes it, just
// before the reducer takes it, so the allreduce still overlaps backward, once per step. Dropout
// draws from micro-step step x K + k. Batch-norm layers see each micro-batch alone: their batch
// statistics, and their running averages, are per micro-batch, as in PyTorch.
StepOutcome Trainer::train_step(const std::function<MicroBatch(int64_t)>& next) {
  StepClock clock(profile_, graph_->device());  // when profiling (bench --profile)
  const auto started = std::chrono::steady_clock::now();
  double data_s = 0;  // inside next(): not compute (Note [Naming the straggler])
  const RunContext step = begin_step();
  const double loss_scale = loss_scaling_->scale();
  const int64_t K = config_.train.accumulate_steps;
  StepOutcome loss;
  for (int64_t k = 0; k < K; ++k) {
    const auto asked = std::chrono::steady_clock::now();
    const MicroBatch batch = next(k);
    data_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    const RunContext ctx{step.training, step.seed, step.step * static_cast<uint64_t>(K) + static_cast<uint64_t>(k)};
    const bool last = k + 1 == K;
    if (accumulation_) accumulation_->set_last(last);
    const bool replay = replay_.replays(profile_ != nullptr);  // never with K > 1 (checked at set-up)
    forward_and_loss(batch.images, batch.labels, batch.on, ctx, loss_scale / static_cast<double>(K), replay, clock);
    if (!replay || !replay_.covers_backward()) {
      ComputeSpan span(timeline_.get(), "backward");
      graph_->backward(head_->dy.views(), ctx);
    }
    const LossResult micro = read_loss();
    if (!last) accumulation_->add(k == 0, timeline_.get());
    loss.loss += micro.loss / static_cast<double>(K);
    loss.correct1 += micro.correct1;
    loss.correct5 += micro.correct5;
  }
  if (fault_requested("slow_step", world_.rank())) std::this_thread::sleep_for(std::chrono::milliseconds(40));
  loss.compute_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() - data_s;
  inject_fault("backward", world_.rank(), position_.now.step);  // the reducer's thread is mid-ring
  const auto finished = std::chrono::steady_clock::now();
  if (reducer_) {
    ComputeSpan span(timeline_.get(), "wait for allreduce");
    reducer_->finish();
  }
  loss.averages_wait_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - finished).count();
  if (reducer_) {
    loss.links = reducer_->collective().links();
    const GradHook& hook = reducer_->hook();
    loss.averaged_bytes = hook.floats_at(position_.now.step) * (config_.dist.wire == Wire::kFp32 ? 4 : 2);
    loss.averaging_error = hook.error();
    loss.averaging_error_key = hook.error_key();
  }
  if (loss_scaling_->gradients_apply(*graph_, position_.now.step) && (!reducer_ || !reducer_->updates_parameters())) {
    double grad_scale = 1.0 / loss_scale;
    if (config_.train.clip_grad_norm > 0) {  // on the averaged gradients: every rank alike
      grad_norm_ = clip_grad_norm(*graph_, config_.train.clip_grad_norm, grad_scale);
      grad_scale *= grad_norm_.coef;
    }
    update(grad_scale, clock);
  }
  if (fault_requested("flip_parameter_bit", world_.rank(), position_.now.step)) flip_parameter_bit(*graph_);
  clock.step_done();
  replay_.step_done();
  ++position_.now.step;
  const int64_t images = global_batch(config_.train, world_.size());
  position_.now.images_seen += images;
  position_.now.epoch_positions += images;  // the sampler's, in the epoch
  return loss;
}

void Trainer::check_replicas_now(const std::string& when, bool with_momentum) {
  if (fault_requested("freeze_before_replica_check", world_.rank(), position_.now.step)) freeze_this_process();
  check_replicas(replica_print(*graph_, *optimizer_, loss_scaling_->scale(), grad_norm_.total, with_momentum), world_,
                 when, &between_steps_);
}

void Trainer::check_replicas_after_step() {
  const int64_t every = config_.dist.check_replicas_every_steps;
  if (world_.size() == 1 || every == 0 || position_.now.step % every != 0) return;
  // The momentum where every rank holds all of it (Note [Replica check]).
  check_replicas_now(str_cat("after step ", position_.now.step), !(reducer_ && reducer_->updates_parameters()));
}

RunContext Trainer::begin_step() {
  set_current_training_step(position_.now.step);
  inject_fault("step", world_.rank(), position_.now.step);
  schedule_.lr = schedule_.rates.at(position_.now.step);  // before the reducer's begin_step: a sharded update reads it
  if (reducer_) reducer_->begin_step(position_.now.step);
  return RunContext{true, static_cast<uint64_t>(config_.train.seed), static_cast<uint64_t>(position_.now.step)};
}

void Trainer::forward_and_loss(const float* images, const int32_t* labels, Device images_on, const RunContext& ctx,
                               double loss_scale, bool replay, StepClock& clock) {
  const double smoothing = config_.train.label_smoothing;
  ComputeSpan span(timeline_.get(), !replay                     ? "forward"
                                    : replay_.covers_backward() ? "forward and backward, replayed"
                                                                : "forward, replayed");
  graph_->set_input(images, images_on);
  graph_->begin_forward(ctx);
  head_->loss.set_targets(labels);
  if (replay) {
    // Runs once, while recording; it takes its values by copy all the same, as the recording does.
    replay_.replay(loss_scale, [this, ctx, loss_scale, smoothing] {
      graph_->forward_work(ctx);
      head_->loss.compute(*graph_, smoothing, &head_->dy, loss_scale);
      if (replay_.covers_backward()) graph_->backward(head_->dy.views(), ctx);
    });
  } else {
    graph_->forward_work(ctx);
    clock.issued(&StepTimes::forward_host_s);
    head_->loss.compute(*graph_, smoothing, &head_->dy, loss_scale);
  }
  clock.done(&StepTimes::forward_s);
}

// Note [Reading the loss]
// The loss is read once backward is issued, not between forward and backward: on a GPU the read
// waits for the device, and there it would empty the queue just where the step's smallest layers
// (the end of forward, the start of backward) follow, which the host must then issue with nothing
// banked. After backward the wait ends on the last gradient ready, the compute time Note [Naming
// the straggler] takes, and leaves the collective's stream running. A loss gone non-finite then
// stops the run after a backward on it, before any checkpoint; under dist.sharded_update, which
// updates each bucket as its average lands, some parameters in memory may already be updated, but
// nothing writes them.
LossResult Trainer::read_loss() {
  const LossResult loss = head_->loss.result();
  RT_CHECK(std::isfinite(loss.loss), "loss became ", loss.loss, " at step ", position_.now.step + 1, " (learning rate ",
           schedule_.lr, "): lower ", config_.train.lr > 0 ? "train.lr" : "train.lr_per_256",
           " or add schedule.warmup_epochs; the last checkpoint is untouched");
  return loss;
}

void Trainer::update(double grad_scale, StepClock& clock) {
  ComputeSpan span(timeline_.get(), "optimizer");
  clock.start();
  optimizer_->step(schedule_.lr, grad_scale);
  clock.issued(&StepTimes::optimizer_host_s);
  clock.done(&StepTimes::optimizer_s);
}

}  // namespace rt
