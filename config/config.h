// The run configuration: TOML tables mirror these structs one to one (table [train] -> TrainConfig),
// with the values a key takes when the file leaves it out. What each key means and which values it
// takes is said once, in its schema entry (config/config_schema.h). Loading is strict: unknown keys,
// wrong types, out-of-range values and settings that contradict each other are rt::Error naming
// the file, line and key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/run_settings.h"

namespace rt {

struct ModelConfig {
  std::string name = "lenet";
  int64_t num_classes = 10;
  double dropout = 0.0;
  bool aux_logits = true;
  bool operator==(const ModelConfig&) const = default;
};

struct DataConfig {
  DataSource source = DataSource::kIdx;
  int64_t image_size = 0;
  std::string dir = "/usr/share/datasets/fashion-mnist";
  std::string train_images = "train-images-idx3-ubyte.gz";
  std::string train_labels = "train-labels-idx1-ubyte.gz";
  std::string test_images = "t10k-images-idx3-ubyte.gz";
  std::string test_labels = "t10k-labels-idx1-ubyte.gz";
  std::vector<double> mean = {0.2860};
  std::vector<double> std = {0.3530};
  TailPolicy tail = TailPolicy::kDrop;
  std::string train_folder = "train";
  std::string val_folder = "val";
  int64_t channels = 3;
  int64_t resize_size = 0;
  bool random_crop = true;
  std::vector<double> crop_scale = {0.08, 1.0};
  std::vector<double> crop_ratio = {3.0 / 4.0, 4.0 / 3.0};
  bool flip = true;
  int64_t workers = 0;
  int64_t prefetch = 4;
  BadFilePolicy on_bad_file = BadFilePolicy::kSkip;
  int64_t max_image_pixels = 178'956'970;
  bool rebuild_index = false;
  int64_t label_offset = 1;
  JpegDecode decode = JpegDecode::kRegion;
  bool operator==(const DataConfig&) const = default;
};

struct TrainConfig {
  int64_t epochs = 5;
  int64_t batch_per_rank = 64;
  int64_t accumulate_steps = 1;
  double lr_per_256 = 0.1;
  double lr = 0;  // > 0: the base rate for the whole global batch (lr_per_256 is then 0)
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 5e-4;
  bool decay_bias_and_bn = false;
  double label_smoothing = 0.0;
  double clip_grad_norm = 0.0;
  OptimizerKind optimizer = OptimizerKind::kSgd;
  double trust_coefficient = 0.001;
  double lars_epsilon = 0.0;
  int64_t bn_group = 1;
  int64_t seed = 1;
  int64_t threads = 0;
  Device device = Device::kCpu;
  ConvAlgorithm conv_algorithm = ConvAlgorithm::kDirect;
  Precision precision = Precision::kFp32;
  bool bf16_emulation = false;
  bool cuda_graph = false;
  CudnnGraphUse cudnn_graph = CudnnGraphUse::kNever;
  int64_t global_batch = 0;  // > 0: fixed at any rank count (Note [Fixed global batch] in config/batch_shape.h)
  bool operator==(const TrainConfig&) const = default;
};

// Starting from weights trained elsewhere (Note [Fine-tuning] in app/init_weights.h).
struct FinetuneConfig {
  std::string weights;  // a safetensors file of torchvision's names; "" = random initialisation
  std::string partial;  // comma-separated name prefixes whose tensors may stay at their initialisation
  std::string freeze;   // comma-separated layer-name prefixes whose parameters do not train
  bool frozen_bn_training = false;
  double head_lr_scale = 1;
  bool operator==(const FinetuneConfig&) const = default;
};

struct ScheduleConfig {
  ScheduleKind kind = ScheduleKind::kCosine;
  double warmup_epochs = 0.0;
  std::vector<double> milestones = {};
  double factor = 0.1;
  double final_fraction = 0.0;
  double power = 2.0;
  double end_lr = 0;        // > 0: the final rate, absolute (instead of final_fraction)
  double decay_epochs = 0;  // > 0: the decay's own length after warmup; 0: to train.epochs
  int64_t decay_steps = 0;  // the same in steps
  bool operator==(const ScheduleConfig&) const = default;
};

struct DistConfig {
  Allreduce allreduce = Allreduce::kRing;
  TransportChoice transport = TransportChoice::kAuto;
  std::string tcp_interface;
  Hierarchy hierarchy = Hierarchy::kAuto;
  Wire wire = Wire::kFp32;
  Compression compression = Compression::kNone;
  int64_t powersgd_rank = 4;
  int64_t powersgd_start_step = 1000;
  double powersgd_min_ratio = 2;
  double bucket_mb = 25;
  double first_bucket_mb = 1;
  Autotune autotune = Autotune::kAuto;
  double autotune_max_share = 0.05;
  std::string autotune_trials;
  bool overlap = true;
  bool sharded_update = true;
  double stall_warn_s = 60;
  double stall_abort_s = 300;
  int64_t check_replicas_every_steps = 20;
  bool operator==(const DistConfig&) const = default;
};

struct BenchConfig {
  int64_t warmup_steps = 10;
  int64_t windows = 10;
  int64_t steps_per_window = 10;
  bool operator==(const BenchConfig&) const = default;
};

struct EvalConfig {
  int64_t batch = 500;
  int64_t every_epochs = 1;
  int64_t offset_epochs = 0;  // evaluations after epochs offset + k x every_epochs
  double target_top1 = 0;     // > 0: stop once an evaluation reaches it
  bool operator==(const EvalConfig&) const = default;
};

struct LogConfig {
  int64_t every_steps = 50;
  std::string metrics = "metrics.jsonl";
  bool tensorboard = false;
  ProgressMode progress = ProgressMode::kAuto;
  std::string timeline = "";
  int64_t timeline_first_step = 5;
  int64_t timeline_steps = 3;
  double timeline_max_mb = 64;
  bool mlperf = false;  // MLPerf's :::MLLOG lines in checkpoint.dir/mlperf.log (rank 0)
  bool operator==(const LogConfig&) const = default;
};

// What MLPerf's log says of the submission (log.mlperf), as its rules name the keys.
struct MlperfConfig {
  std::string submission_org;
  std::string submission_platform;
  MlperfDivision submission_division = MlperfDivision::kClosed;
  MlperfStatus submission_status = MlperfStatus::kOnprem;
  bool cache_clear = false;  // the launch script cleared the page cache before this run
  bool operator==(const MlperfConfig&) const = default;
};

struct CheckpointConfig {
  std::string dir = "runs/default";
  int64_t every_epochs = 1;
  int64_t every_steps = 0;
  double every_minutes = 0;
  int64_t keep = 1;
  std::string signals = "SIGTERM,SIGUSR1";
  double signal_grace_s = 0;
  bool operator==(const CheckpointConfig&) const = default;
};

struct Config {
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  FinetuneConfig finetune;
  ScheduleConfig schedule;
  DistConfig dist;
  BenchConfig bench;
  EvalConfig eval;
  LogConfig log;
  CheckpointConfig checkpoint;
  MlperfConfig mlperf;
  bool operator==(const Config&) const = default;
};

// Reads FILE, then applies each override "table.key=value" (value in TOML syntax; a bare word is
// taken as a string). Throws rt::Error naming file, line and key on any problem.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// Same, from text; `source_name` is what error messages call the file.
Config parse_config(const std::string& text, const std::string& source_name,
                    const std::vector<std::string>& overrides = {});
// rt::Error with the first rule of parse_config's that `config` breaks (for a Config made in code;
// a loaded one has passed them all).
void check_rules(const Config& config);
// The fully resolved config as TOML, every key present: parse_config(to_toml(c), ...) == c.
std::string to_toml(const Config& config);

}  // namespace rt
