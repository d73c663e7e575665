#include "app/trainer.h"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <thread>

#include "app/atomic_file.h"
#include "app/json.h"
#include "app/progress.h"
#include "base/check.h"
#include "data/batch.h"
#include "data/sampler.h"
#include "models/registry.h"
#include "nn/ops/softmax_cross_entropy.h"

namespace rt {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string data_path(const DataConfig& d, const std::string& file) {
  return (std::filesystem::path(d.dir) / file).string();
}

// The rows [0, rows) of a plain (N, K) tensor, without copying.
Tensor leading_rows(const Tensor& t, int64_t rows) {
  return Tensor(plain_spec({rows, t.dim(1)}, t.device()), const_cast<float*>(t.data()), nullptr);
}

void copy_state(Graph& from, Graph& to) {
  std::memcpy(to.param_arena(), from.param_arena(), static_cast<size_t>(from.arena_floats()) * sizeof(float));
  for (size_t i = 0; i < from.buffers().size(); ++i) {
    const Tensor& src = from.buffers()[i].value;
    std::memcpy(const_cast<float*>(to.buffers()[i].value.data()), src.data(), src.bytes());
  }
}

}  // namespace

Trainer::Trainer(const Config& config, std::ostream& out) : config_(config), resolved_(to_toml(config)), out_(out) {
  const int threads = config.train.threads > 0 ? static_cast<int>(config.train.threads)
                                               : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  omp_set_num_threads(threads);
  const Device device = parse_device(config.train.device);

  const DataConfig& d = config.data;
  train_ = load_idx_dataset(data_path(d, d.train_images), data_path(d, d.train_labels), d.mean, d.std);
  test_ = load_idx_dataset(data_path(d, d.test_images), data_path(d, d.test_labels), d.mean, d.std);
  const int64_t classes = std::max(train_.num_classes, test_.num_classes);
  RT_CHECK(classes <= config.model.num_classes, "the data in '", d.dir, "' has labels up to ", classes - 1,
           " but model.num_classes = ", config.model.num_classes);

  ModelOptions mo{{train_.channels, train_.height, train_.width}, config.model.num_classes, config.model.dropout};
  graph_ = build_model(config.model.name, mo);
  graph_->plan(config.train.batch_per_rank, device);
  graph_->init_parameters(static_cast<uint64_t>(config.train.seed));
  eval_graph_ = build_model(config.model.name, mo);
  eval_graph_->plan(config.eval.batch, device);

  sgd_ = std::make_unique<Sgd>(*graph_, SgdOptions{config.train.momentum, config.train.nesterov,
                                                   config.train.weight_decay, config.train.decay_bias_and_bn});

  const int64_t world = 1;  // data-parallel ranks arrive with the distributed core
  const int64_t global_batch = config.train.batch_per_rank * world;
  const EpochSampler sampler(train_.count, config.train.batch_per_rank, static_cast<uint64_t>(config.train.seed));
  const int64_t steps_per_epoch = sampler.steps_per_epoch();
  const ScheduleConfig& s = config.schedule;
  schedule_.kind = parse_schedule_kind(s.kind);
  schedule_.base = scaled_lr(config.train.lr_per_256, global_batch);
  schedule_.warmup_steps = static_cast<int64_t>(std::llround(s.warmup_epochs * static_cast<double>(steps_per_epoch)));
  for (double m : s.milestones) schedule_.milestones.push_back(static_cast<int64_t>(std::llround(m * static_cast<double>(steps_per_epoch))));
  schedule_.factor = s.factor;
  schedule_.final_fraction = s.final_fraction;
  schedule_.total_steps = steps_per_epoch * config.train.epochs;
  position_.seed = config.train.seed;

  out_ << "ringtrain: model " << config.model.name << " (" << graph_->parameter_count() << " parameters), "
       << train_.count << " training / " << test_.count << " test images of " << shape_str(mo.input_shape) << ", "
       << threads << " threads, " << device_name(device) << "\n"
       << "ringtrain: global batch " << global_batch << ", learning rate " << schedule_.base << " ("
       << config.train.lr_per_256 << " per 256 images), " << steps_per_epoch << " steps per epoch\n";
}

Trainer::~Trainer() = default;

void Trainer::resume(const std::string& dir) {
  position_ = load_checkpoint(dir, *graph_, *sgd_, config_.model.name);
  RT_CHECK(position_.seed == config_.train.seed, "cannot resume from '", dir, "': it was trained with train.seed = ",
           position_.seed, ", the config says ", config_.train.seed);
  out_ << "ringtrain: resumed from " << dir << " after epoch " << position_.epochs_done << " (step "
       << position_.step << ")\n";
}

void Trainer::write_metric(const std::string& line) {
  if (!metrics_path_.empty()) append_line(metrics_path_, line);
}

void Trainer::prepare_run_folder() {
  std::error_code ec;
  std::filesystem::create_directories(config_.checkpoint.dir, ec);
  RT_CHECK(!ec, "cannot create checkpoint folder '", config_.checkpoint.dir, "': ", ec.message());
  write_file_atomically((std::filesystem::path(config_.checkpoint.dir) / "config.toml").string(), resolved_);
  if (!config_.log.metrics.empty())
    metrics_path_ = (std::filesystem::path(config_.checkpoint.dir) / config_.log.metrics).string();
}

TrainResult Trainer::train(int64_t stop_after_epochs) {
  prepare_run_folder();
  const TrainConfig& t = config_.train;
  const EpochSampler sampler(train_.count, t.batch_per_rank, static_cast<uint64_t>(t.seed), 0, 1,
                             config_.data.tail == "pad" ? TailPolicy::kPad : TailPolicy::kDrop);
  const int64_t steps = sampler.steps_per_epoch();
  const int64_t B = t.batch_per_rank;
  const int64_t sample = train_.channels * train_.height * train_.width;
  std::vector<float> images(static_cast<size_t>(B * sample));
  std::vector<int32_t> labels(static_cast<size_t>(B));
  Tensor dlogits(graph_->output_spec());
  Progress progress(Progress::resolve(config_.log.progress), config_.log.every_steps, out_);
  TrainResult result;
  int64_t trained_images = 0;

  const int64_t last_epoch = stop_after_epochs > 0 ? std::min(t.epochs, position_.epochs_done + stop_after_epochs) : t.epochs;
  for (int64_t epoch = position_.epochs_done; epoch < last_epoch; ++epoch) {
    const std::vector<int64_t> order = sampler.epoch_indices(epoch);
    progress.begin_epoch(epoch, t.epochs, steps);
    const auto epoch_start = Clock::now();
    double epoch_loss = 0, epoch_train_seconds = 0;
    int64_t epoch_correct = 0;
    for (int64_t s = 0; s < steps; ++s) {
      const auto step_start = Clock::now();
      gather_batch(train_, std::span<const int64_t>(order).subspan(static_cast<size_t>(s * B), static_cast<size_t>(B)),
                   images.data(), labels.data());
      const RunContext ctx{true, static_cast<uint64_t>(t.seed), static_cast<uint64_t>(position_.step)};
      const Tensor& logits = graph_->forward(images.data(), ctx);
      const LossResult loss = softmax_cross_entropy(logits, labels.data(), t.label_smoothing, &dlogits);
      RT_CHECK(std::isfinite(loss.loss), "loss became ", loss.loss, " at epoch ", epoch + 1, " step ", s + 1,
               " (learning rate ", schedule_.at(position_.step),
               "): lower train.lr_per_256 or add schedule.warmup_epochs; the last checkpoint is untouched");
      graph_->backward(dlogits, ctx);
      const double lr = schedule_.at(position_.step);
      sgd_->step(lr);
      ++position_.step;
      position_.images_seen += B;
      const double dt = seconds_since(step_start);
      result.train_seconds += dt;
      epoch_train_seconds += dt;
      trained_images += B;
      result.step_losses.push_back(loss.loss);
      epoch_loss += loss.loss;
      epoch_correct += loss.correct1;
      const double rate = static_cast<double>(B) / dt;
      // ETA of the whole run, from this run's mean step time so far.
      const int64_t steps_left = (last_epoch - epoch) * steps - (s + 1);
      const double eta = result.train_seconds / static_cast<double>(result.step_losses.size()) * static_cast<double>(steps_left);
      progress.step(s, loss.loss, lr, static_cast<double>((s + 1) * B) / epoch_train_seconds, eta);
      write_metric(JsonLine().add("kind", "step").add("epoch", epoch + 1).add("step", position_.step)
                       .add("loss", loss.loss).add("lr", lr).add("images_per_s", rate).str());
    }
    progress.end_epoch();
    position_.epochs_done = epoch + 1;
    const double train_loss = epoch_loss / static_cast<double>(steps);
    const double train_top1 = static_cast<double>(epoch_correct) / static_cast<double>(steps * B);
    JsonLine record;
    record.add("kind", "epoch").add("epoch", epoch + 1).add("step", position_.step).add("train_loss", train_loss)
        .add("train_top1", train_top1).add("epoch_seconds", seconds_since(epoch_start));
    char line[256];
    std::snprintf(line, sizeof line, "epoch %lld/%lld: train loss %.4f top-1 %.2f%%", static_cast<long long>(epoch + 1),
                  static_cast<long long>(t.epochs), train_loss, 100 * train_top1);
    out_ << line;
    if ((epoch + 1) % config_.eval.every_epochs == 0 || epoch + 1 == t.epochs) {
      result.last_eval = evaluate();
      record.add("test_loss", result.last_eval.loss).add("test_top1", result.last_eval.top1)
          .add("test_top5", result.last_eval.top5);
      std::snprintf(line, sizeof line, " | test loss %.4f top-1 %.2f%% top-5 %.2f%%", result.last_eval.loss,
                    100 * result.last_eval.top1, 100 * result.last_eval.top5);
      out_ << line;
    }
    std::snprintf(line, sizeof line, " (%.1f s)\n", seconds_since(epoch_start));
    out_ << line << std::flush;
    write_metric(record.str());
    if ((epoch + 1) % config_.checkpoint.every_epochs == 0 || epoch + 1 == t.epochs)
      save_checkpoint(config_.checkpoint.dir, *graph_, *sgd_, position_, config_.model.name, resolved_);
  }
  result.images_per_s = result.train_seconds > 0 ? static_cast<double>(trained_images) / result.train_seconds : 0;
  return result;
}

EvalResult Trainer::evaluate() {
  copy_state(*graph_, *eval_graph_);
  const EpochSampler sampler(test_.count, config_.eval.batch, 0, 0, 1, TailPolicy::kPad, false);
  const std::vector<int64_t> indices = sampler.eval_indices();
  const int64_t B = config_.eval.batch;
  const int64_t sample = test_.channels * test_.height * test_.width;
  std::vector<float> images(static_cast<size_t>(B * sample));
  std::vector<int32_t> labels(static_cast<size_t>(B));
  std::vector<int64_t> chunk(static_cast<size_t>(B));
  EvalResult r;
  double loss_sum = 0;
  int64_t c1 = 0, c5 = 0;
  for (size_t start = 0; start < indices.size(); start += static_cast<size_t>(B)) {
    const int64_t valid = std::min<int64_t>(B, static_cast<int64_t>(indices.size() - start));
    // A short last chunk is padded with its first sample; only the valid rows are scored.
    for (int64_t i = 0; i < B; ++i) chunk[i] = indices[start + static_cast<size_t>(i < valid ? i : 0)];
    gather_batch(test_, chunk, images.data(), labels.data());
    const Tensor& logits = eval_graph_->forward(images.data(), RunContext{false, 0, 0});
    const LossResult l = softmax_cross_entropy(leading_rows(logits, valid), labels.data(), 0.0, nullptr);
    loss_sum += l.loss * static_cast<double>(valid);
    c1 += l.correct1;
    c5 += l.correct5;
    r.samples += valid;
  }
  r.loss = loss_sum / static_cast<double>(r.samples);
  r.top1 = static_cast<double>(c1) / static_cast<double>(r.samples);
  r.top5 = static_cast<double>(c5) / static_cast<double>(r.samples);
  return r;
}

}  // namespace rt
