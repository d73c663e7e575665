// The training and evaluation loops of one process: data, model, optimizer and schedule built
// from a resolved Config; per-step and per-epoch metrics to JSONL; checkpoints after epochs.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "app/checkpoint.h"
#include "app/config.h"
#include "data/labeled_images.h"
#include "nn/optim/lr_schedule.h"

namespace rt {

struct EvalResult {
  double loss = 0;
  double top1 = 0;  // fractions in [0, 1]
  double top5 = 0;
  int64_t samples = 0;
};

struct TrainResult {
  std::vector<double> step_losses;  // this run's steps, in order
  EvalResult last_eval;             // after the final epoch
  double train_seconds = 0;         // training steps only (no evaluation or checkpoints)
  double images_per_s = 0;          // training images / train_seconds
};

class Trainer {
 public:
  // `out` receives the human-readable log. Loads data and builds the model; writes no files.
  Trainer(const Config& config, std::ostream& out);
  ~Trainer();

  // Continues from DIR/checkpoint.safetensors (see checkpoint.h).
  void resume(const std::string& dir);
  // Trains to config.train.epochs; `stop_after_epochs` > 0 stops earlier (tests simulate a crash).
  // Fails before the first step if checkpoint.dir cannot be created or written.
  TrainResult train(int64_t stop_after_epochs = 0);
  // Top-1/top-5 and mean loss on the test set, with running batch-norm statistics.
  EvalResult evaluate();

  const TrainingPosition& position() const { return position_; }
  Graph& graph() { return *graph_; }

 private:
  // Creates checkpoint.dir and writes the resolved config beside the checkpoints.
  void prepare_run_folder();
  void write_metric(const std::string& line);

  Config config_;
  std::string resolved_;  // to_toml(config_)
  std::ostream& out_;
  LabeledImages train_, test_;
  std::unique_ptr<Graph> graph_, eval_graph_;
  std::unique_ptr<Sgd> sgd_;
  LrSchedule schedule_;
  TrainingPosition position_;
  std::string metrics_path_;
};

}  // namespace rt
