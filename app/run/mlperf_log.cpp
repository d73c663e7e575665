#include "app/run/mlperf_log.h"

#include <chrono>
#include <filesystem>

#include "app/run/run_target.h"
#include "app/training_schedule.h"
#include "base/check.h"

namespace rt {

MlperfLog::MlperfLog(const Config& config, int rank) : enabled_(config.log.mlperf && rank == 0), config_(config) {
  if (!enabled_) return;
  const MlperfConfig& m = config.mlperf;
  // submission_division first: the rules' time limit on initialisation depends on it.
  point("submission_division", name_of(m.submission_division));
  point("submission_benchmark", "resnet");
  point("submission_org", m.submission_org);
  point("submission_platform", m.submission_platform);
  point("submission_status", name_of(m.submission_status));
  point("cache_clear", m.cache_clear);
  event("INTERVAL_START", "init_start", nullptr);
}

void MlperfLog::hyperparameters(const LrSchedule& schedule, int64_t ranks, int64_t train_samples,
                                int64_t eval_samples) {
  if (!enabled_) return;
  const TrainConfig& t = config_.train;
  const ScheduleConfig& s = config_.schedule;
  point("seed", t.seed);
  point("global_batch_size", global_batch(t, ranks));
  point("train_samples", train_samples);
  point("eval_samples", eval_samples);
  point("gradient_accumulation_steps", t.accumulate_steps);
  point("model_bn_span", t.batch_per_rank * t.bn_group);
  // MLPerf's names are train.optimizer's: "sgd", "lars", and its keys "sgd_opt_..", "lars_opt_..".
  const std::string name(name_of(t.optimizer));
  point("opt_name", name);
  const std::string o = name + "_opt_";
  point((o + "base_learning_rate").c_str(), schedule.base);
  // The config's own end rate where it gives one: MLPerf's rules ask exactly 0.0001.
  point((o + "end_learning_rate").c_str(), s.end_lr > 0 ? s.end_lr : schedule.base * schedule.final_fraction);
  point((o + "learning_rate_decay_poly_power").c_str(), s.power);
  point((o + "learning_rate_decay_steps").c_str(), schedule.total_steps - schedule.warmup_steps);
  point((o + "momentum").c_str(), t.momentum);
  point((o + "weight_decay").c_str(), t.weight_decay);
  if (t.optimizer == OptimizerKind::kLars) {  // keys MLPerf's rules ask of LARS alone
    point("lars_epsilon", t.lars_epsilon);
    point("lars_opt_learning_rate_warmup_epochs", s.warmup_epochs);
  } else {
    point("opt_learning_rate_warmup_epochs", s.warmup_epochs);
  }
}

void MlperfLog::open(const std::string& dir) {
  if (!enabled_) return;
  const std::string path = (std::filesystem::path(dir) / "mlperf.log").string();
  file_.open(path, std::ios::app);
  RT_CHECK(file_.good(), "log.mlperf: cannot write '", path, "'");
  for (const std::string& line : pending_) file_ << line;
  file_.flush();
  pending_.clear();
}

void MlperfLog::run_start() {
  if (!enabled_) return;
  event("INTERVAL_END", "init_stop", nullptr);
  event("INTERVAL_START", "run_start", nullptr);
}

void MlperfLog::epoch_start(int64_t epoch) {
  if (!enabled_) return;
  if (block_first_ == 0) {
    int64_t last = epoch;
    while (!evaluates_after(config_.eval, last, config_.train.epochs)) ++last;
    block_first_ = epoch;
    event("INTERVAL_START", "block_start", nullptr, {{"first_epoch_num", epoch}, {"epoch_count", last - epoch + 1}});
  }
  event("INTERVAL_START", "epoch_start", nullptr, {{"epoch_num", epoch}});
}

void MlperfLog::epoch_stop(int64_t epoch) {
  if (!enabled_) return;
  event("INTERVAL_END", "epoch_stop", nullptr, {{"epoch_num", epoch}});
}

double MlperfLog::eval(int64_t epoch, const std::function<double()>& evaluate) {
  if (!enabled_) return evaluate();
  event("INTERVAL_START", "eval_start", nullptr, {{"epoch_num", epoch}});
  const double top1 = evaluate();
  event("INTERVAL_END", "eval_stop", nullptr, {{"epoch_num", epoch}});
  point("eval_accuracy", top1, {{"epoch_num", epoch}});
  event("INTERVAL_END", "block_stop", nullptr, {{"first_epoch_num", block_first_}});
  block_first_ = 0;
  return top1;
}

void MlperfLog::run_stop(bool reached) {
  if (!enabled_) return;
  event("INTERVAL_END", "run_stop", nullptr, {{"status", reached ? "success" : "aborted"}});
  file_.flush();
}

void MlperfLog::event(const char* type, const char* key, const Json& value, Json metadata, std::source_location at) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  Json m = {{"file", std::filesystem::path(at.file_name()).filename().string()}, {"lineno", at.line()}};
  for (auto& [k, v] : metadata.items()) m[k] = v;
  const Json line = {{"namespace", ""}, {"time_ms", ms},  {"event_type", type},
                     {"key", key},      {"value", value}, {"metadata", m}};
  const std::string text = ":::MLLOG " + line.dump() + "\n";
  if (file_.is_open()) {
    file_ << text;
    file_.flush();
  } else {
    pending_.push_back(text);
  }
}

}  // namespace rt
