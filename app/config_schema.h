// The config schema: one entry per TOML key, in the order to_toml prints them. Each entry names
// the table and key, where the value lives in Config, what values are valid and a one-line doc;
// loading, validation, printing and --set overrides (app/config.cpp) are all driven by it, so a
// new key is one line here plus its field in app/config.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "app/config.h"

namespace rt {

// Where one key's value lives: a function handing out a reference into the Config.
template <typename T>
using FieldRef = T& (*)(Config&);
using AnyFieldRef = std::variant<FieldRef<bool>, FieldRef<int64_t>, FieldRef<double>, FieldRef<std::string>,
                                 FieldRef<std::vector<double>>>;

template <auto kTable, auto kField>
auto& member(Config& config) {
  return (config.*kTable).*kField;
}

// Valid numbers (for arrays: each element). Infinite bounds are not printed.
struct Bound {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool hi_open = false;
};
constexpr Bound at_least(double lo) { return {.lo = lo}; }
constexpr Bound above(double lo) { return {.lo = lo, .lo_open = true}; }
constexpr Bound unit_open_top() { return {.lo = 0, .hi = 1, .hi_open = true}; }  // [0, 1)

struct KeySpec {
  std::string_view table;
  std::string_view key;
  AnyFieldRef field;
  std::string_view doc;
  Bound bound = {};
  std::vector<std::string_view> choices = {};  // strings: the allowed values; empty = any
  bool non_empty = false;                      // strings and arrays
  bool increasing = false;                     // arrays: strictly increasing
  std::vector<std::string_view> also = {};     // names other tools use; only for "did you mean"
};

inline const std::vector<KeySpec>& config_schema() {
  using C = Config;
  static const std::vector<KeySpec> schema = {
      {.table = "model",
       .key = "name",
       .field = &member<&C::model, &ModelConfig::name>,
       .doc = "a name from the model table (models/registry.h)",
       .non_empty = true,
       .also = {"arch", "architecture", "model"}},
      {.table = "model",
       .key = "num_classes",
       .field = &member<&C::model, &ModelConfig::num_classes>,
       .doc = "outputs of the classifier",
       .bound = at_least(2),
       .also = {"classes", "n_classes"}},
      {.table = "model",
       .key = "dropout",
       .field = &member<&C::model, &ModelConfig::dropout>,
       .doc = "probability of zeroing, where the model has dropout",
       .bound = unit_open_top()},
      {.table = "model",
       .key = "aux_logits",
       .field = &member<&C::model, &ModelConfig::aux_logits>,
       .doc = "Inception-v3's auxiliary classifier, loss weight 0.4 (other models have none)",
       .also = {"aux", "aux_head"}},

      {.table = "data",
       .key = "source",
       .field = &member<&C::data, &DataConfig::source>,
       .doc = "idx: MNIST-format files; imagefolder: ROOT/<class>/<file> image trees; synthetic: one fixed "
              "random batch, for ringtrain bench",
       .choices = {"idx", "imagefolder", "synthetic"},
       .also = {"format", "dataset"}},
      {.table = "data",
       .key = "image_size",
       .field = &member<&C::data, &DataConfig::image_size>,
       .doc = "synthetic, imagefolder: square input side; 0 = the model's usual size",
       .bound = at_least(0),
       .also = {"resolution", "input_size", "crop_size"}},
      {.table = "data",
       .key = "dir",
       .field = &member<&C::data, &DataConfig::dir>,
       .doc = "idx: folder of the four files below; imagefolder: folder of train_folder and val_folder",
       .non_empty = true,
       .also = {"path", "root", "data_dir"}},
      {.table = "data",
       .key = "train_images",
       .field = &member<&C::data, &DataConfig::train_images>,
       .doc = "training images, relative to dir",
       .non_empty = true},
      {.table = "data",
       .key = "train_labels",
       .field = &member<&C::data, &DataConfig::train_labels>,
       .doc = "training labels, relative to dir",
       .non_empty = true},
      {.table = "data",
       .key = "test_images",
       .field = &member<&C::data, &DataConfig::test_images>,
       .doc = "test images, relative to dir",
       .non_empty = true},
      {.table = "data",
       .key = "test_labels",
       .field = &member<&C::data, &DataConfig::test_labels>,
       .doc = "test labels, relative to dir",
       .non_empty = true},
      {.table = "data",
       .key = "mean",
       .field = &member<&C::data, &DataConfig::mean>,
       .doc = "per channel, subtracted from pixels scaled to [0, 1]",
       .non_empty = true},
      {.table = "data",
       .key = "std",
       .field = &member<&C::data, &DataConfig::std>,
       .doc = "per channel, divides after the mean",
       .bound = above(0),
       .non_empty = true,
       .also = {"stddev"}},
      {.table = "data",
       .key = "tail",
       .field = &member<&C::data, &DataConfig::tail>,
       .doc = "what a shard does with its last partial batch",
       .choices = {"drop", "pad"},
       .also = {"drop_last"}},
      {.table = "data",
       .key = "train_folder",
       .field = &member<&C::data, &DataConfig::train_folder>,
       .doc = "imagefolder: training tree, relative to dir",
       .non_empty = true,
       .also = {"train_dir"}},
      {.table = "data",
       .key = "val_folder",
       .field = &member<&C::data, &DataConfig::val_folder>,
       .doc = "imagefolder: evaluation tree, relative to dir",
       .non_empty = true,
       .also = {"val_dir", "test_folder"}},
      {.table = "data",
       .key = "channels",
       .field = &member<&C::data, &DataConfig::channels>,
       .doc = "imagefolder: 3 = RGB, 1 = luminance as Pillow's convert(\"L\")",
       .bound = {.lo = 1, .hi = 3}},
      {.table = "data",
       .key = "resize_size",
       .field = &member<&C::data, &DataConfig::resize_size>,
       .doc = "imagefolder evaluation: shorter side before the centre crop; 0 = image_size x 256 / 224",
       .bound = at_least(0),
       .also = {"resize"}},
      {.table = "data",
       .key = "random_crop",
       .field = &member<&C::data, &DataConfig::random_crop>,
       .doc = "imagefolder training: random resized crop; false = the evaluation transform"},
      {.table = "data",
       .key = "crop_scale",
       .field = &member<&C::data, &DataConfig::crop_scale>,
       .doc = "random crop: [lowest, highest] fraction of the image's area",
       .bound = {.lo = 0, .hi = 1, .lo_open = true},
       .non_empty = true,
       .also = {"scale"}},
      {.table = "data",
       .key = "crop_ratio",
       .field = &member<&C::data, &DataConfig::crop_ratio>,
       .doc = "random crop: [lowest, highest] width / height",
       .bound = above(0),
       .non_empty = true,
       .also = {"ratio"}},
      {.table = "data",
       .key = "flip",
       .field = &member<&C::data, &DataConfig::flip>,
       .doc = "imagefolder training: horizontal flip with probability 1/2",
       .also = {"hflip", "mirror"}},
      {.table = "data",
       .key = "workers",
       .field = &member<&C::data, &DataConfig::workers>,
       .doc = "imagefolder: decoding threads per rank; 0 = the rank's CPUs left over by compute (at least 1)",
       .bound = at_least(0),
       .also = {"num_workers", "threads"}},
      {.table = "data",
       .key = "prefetch",
       .field = &member<&C::data, &DataConfig::prefetch>,
       .doc = "imagefolder: batches made ahead of the training loop",
       .bound = at_least(1),
       .also = {"prefetch_factor", "queue"}},
      {.table = "data",
       .key = "on_bad_file",
       .field = &member<&C::data, &DataConfig::on_bad_file>,
       .doc = "imagefolder: an unreadable file is skipped (warned about and counted) or stops the run",
       .choices = {"skip", "error"}},
      {.table = "data",
       .key = "rebuild_index",
       .field = &member<&C::data, &DataConfig::rebuild_index>,
       .doc = "imagefolder: rescan the folders instead of reading the cached file index"},

      {.table = "train",
       .key = "epochs",
       .field = &member<&C::train, &TrainConfig::epochs>,
       .doc = "passes over the training set",
       .bound = at_least(1),
       .also = {"max_epochs", "num_epochs"}},
      {.table = "train",
       .key = "batch_per_rank",
       .field = &member<&C::train, &TrainConfig::batch_per_rank>,
       .doc = "images per rank per step; global batch = this x world size",
       .bound = at_least(1),
       .also = {"batch_size"}},
      {.table = "train",
       .key = "lr_per_256",
       .field = &member<&C::train, &TrainConfig::lr_per_256>,
       .doc = "learning rate for 256 images; scaled by global batch / 256",
       .bound = above(0),
       .also = {"lr", "learning_rate", "base_lr"}},
      {.table = "train",
       .key = "momentum",
       .field = &member<&C::train, &TrainConfig::momentum>,
       .doc = "SGD momentum",
       .bound = unit_open_top()},
      {.table = "train",
       .key = "nesterov",
       .field = &member<&C::train, &TrainConfig::nesterov>,
       .doc = "Nesterov momentum"},
      {.table = "train",
       .key = "weight_decay",
       .field = &member<&C::train, &TrainConfig::weight_decay>,
       .doc = "L2 penalty",
       .bound = at_least(0),
       .also = {"wd"}},
      {.table = "train",
       .key = "decay_bias_and_bn",
       .field = &member<&C::train, &TrainConfig::decay_bias_and_bn>,
       .doc = "false: biases and batch-norm parameters get no weight decay"},
      {.table = "train",
       .key = "label_smoothing",
       .field = &member<&C::train, &TrainConfig::label_smoothing>,
       .doc = "mass spread evenly over all classes",
       .bound = unit_open_top()},
      {.table = "train",
       .key = "seed",
       .field = &member<&C::train, &TrainConfig::seed>,
       .doc = "weights, shuffling and dropout all derive from it",
       .bound = at_least(0),
       .also = {"random_seed"}},
      {.table = "train",
       .key = "threads",
       .field = &member<&C::train, &TrainConfig::threads>,
       .doc = "compute threads per process; 0 = the CPUs of its affinity mask and cgroup quota, shared with the ranks "
              "on them",
       .bound = at_least(0),
       .also = {"num_threads"}},
      {.table = "train",
       .key = "device",
       .field = &member<&C::train, &TrainConfig::device>,
       .doc = "where the model runs",
       .choices = {"cpu", "cuda"},
       .also = {"gpu"}},
      {.table = "train",
       .key = "precision",
       .field = &member<&C::train, &TrainConfig::precision>,
       .doc = "fp32: true float32 everywhere; tf32: CUDA convolutions and matrix products round "
              "their inputs to TF32 on tensor cores (float32 storage and accumulation); bf16 / fp16 (CUDA): "
              "activations between convolutions in 16 bits (NHWC), float32 weights, fully connected layers "
              "in TF32; fp16 adds dynamic loss scaling, skipping the steps whose gradients overflow",
       .choices = {"fp32", "tf32", "bf16", "fp16"},
       .also = {"dtype", "amp", "mixed_precision"}},
      {.table = "train",
       .key = "conv_algorithm",
       .field = &member<&C::train, &TrainConfig::conv_algorithm>,
       .doc = "direct: exact, matches PyTorch; winograd: 3x3 stride-1 convolutions by Winograd "
              "F(4x4, 3x3), faster, with more rounding error",
       .choices = {"direct", "winograd"},
       .also = {"conv_algo", "algorithm"}},
      {.table = "train",
       .key = "cuda_graph",
       .field = &member<&C::train, &TrainConfig::cuda_graph>,
       .doc = "CUDA: record a training step's device work as a CUDA graph after the first step and "
              "replay it, so the host issues one launch instead of every kernel (one rank: forward, "
              "loss and backward; several: forward and loss)",
       .also = {"cuda_graphs", "graph_capture"}},
      {.table = "train",
       .key = "cudnn_graph",
       .field = &member<&C::train, &TrainConfig::cudnn_graph>,
       .doc = "CUDA: convolutions through cuDNN's graph API, which reaches engines the legacy API lacks: off; "
              "where_faster, each direction where its plan timed faster than the legacy algorithm; always, "
              "wherever cuDNN has a plan",
       .choices = {"off", "where_faster", "always"},
       .also = {"cudnn_graph_api", "graph_api"}},

      {.table = "schedule",
       .key = "kind",
       .field = &member<&C::schedule, &ScheduleConfig::kind>,
       .doc = "learning-rate schedule",
       .choices = {"constant", "step", "cosine"},
       .also = {"type", "policy", "lr_policy"}},
      {.table = "schedule",
       .key = "warmup_epochs",
       .field = &member<&C::schedule, &ScheduleConfig::warmup_epochs>,
       .doc = "linear ramp from 0 to the base rate",
       .bound = at_least(0)},
      {.table = "schedule",
       .key = "milestones",
       .field = &member<&C::schedule, &ScheduleConfig::milestones>,
       .doc = "epochs where \"step\" multiplies the rate by factor",
       .bound = above(0),
       .increasing = true,
       .also = {"steps", "stepvalue"}},
      {.table = "schedule",
       .key = "factor",
       .field = &member<&C::schedule, &ScheduleConfig::factor>,
       .doc = "multiplier at each milestone, for \"step\"",
       .bound = {.lo = 0, .hi = 1, .lo_open = true},
       .also = {"gamma"}},
      {.table = "schedule",
       .key = "final_fraction",
       .field = &member<&C::schedule, &ScheduleConfig::final_fraction>,
       .doc = "cosine ends at base x this",
       .bound = {.lo = 0, .hi = 1},
       .also = {"eta_min", "min_lr"}},

      {.table = "dist",
       .key = "allreduce",
       .field = &member<&C::dist, &DistConfig::allreduce>,
       .doc = "ring: ringtrain's own ring (on the GPU over NCCL point-to-point); mpi: MPI_Allreduce, nccl: "
              "ncclAllReduce (device = cuda), for comparison",
       .choices = {"ring", "mpi", "nccl"},
       .also = {"algorithm", "backend"}},
      {.table = "dist",
       .key = "transport",
       .field = &member<&C::dist, &DistConfig::transport>,
       .doc = "how the ring moves bytes: shm (shared memory, all ranks on one host), tcp (its own sockets), "
              "mpi (MPI point-to-point), auto (shm on one host, else tcp)",
       .choices = {"auto", "shm", "tcp", "mpi"}},
      {.table = "dist",
       .key = "tcp_interface",
       .field = &member<&C::dist, &DistConfig::tcp_interface>,
       .doc = "tcp transport: the network interface whose addresses ranks connect to (\"\" = any that reaches)",
       .also = {"interface", "iface", "if_include"}},
      {.table = "dist",
       .key = "wire",
       .field = &member<&C::dist, &DistConfig::wire>,
       .doc = "the type gradients travel in on the ring: fp16 or bf16 halve the bytes, sums stay float32, "
              "each rank divides by the world size before sending (parameters always travel in fp32)",
       .choices = {"fp32", "fp16", "bf16"},
       .also = {"compression", "compress", "wire_dtype"}},
      {.table = "dist",
       .key = "bucket_mb",
       .field = &member<&C::dist, &DistConfig::bucket_mb>,
       .doc = "gradient bucket cap in MiB; 0 = one collective per tensor",
       .bound = at_least(0),
       .also = {"fusion_threshold", "bucket_cap_mb", "bucket_size"}},
      {.table = "dist",
       .key = "first_bucket_mb",
       .field = &member<&C::dist, &DistConfig::first_bucket_mb>,
       .doc =
           "cap of the first and the last bucket in MiB: communication starts early and little is left after backward",
       .bound = above(0)},
      {.table = "dist",
       .key = "overlap",
       .field = &member<&C::dist, &DistConfig::overlap>,
       .doc = "allreduce buckets during backward; false = all after backward"},
      {.table = "dist",
       .key = "sharded_update",
       .field = &member<&C::dist, &DistConfig::sharded_update>,
       .doc = "each rank applies SGD to the part of each bucket it finished averaging and the all-gather "
              "shares parameters; false = every rank updates everything after the allreduce",
       .also = {"zero", "shard_optimizer"}},
      {.table = "dist",
       .key = "stall_warn_s",
       .field = &member<&C::dist, &DistConfig::stall_warn_s>,
       .doc = "report a collective that waits this many seconds",
       .bound = above(0)},
      {.table = "dist",
       .key = "stall_abort_s",
       .field = &member<&C::dist, &DistConfig::stall_abort_s>,
       .doc = "abort the job when a collective waits this many seconds",
       .bound = above(0),
       .also = {"timeout"}},

      {.table = "bench",
       .key = "warmup_steps",
       .field = &member<&C::bench, &BenchConfig::warmup_steps>,
       .doc = "untimed steps before the windows",
       .bound = at_least(0),
       .also = {"warmup"}},
      {.table = "bench",
       .key = "windows",
       .field = &member<&C::bench, &BenchConfig::windows>,
       .doc = "timed windows, one images/s figure each",
       .bound = at_least(2)},
      {.table = "bench",
       .key = "steps_per_window",
       .field = &member<&C::bench, &BenchConfig::steps_per_window>,
       .doc = "steps in each timed window",
       .bound = at_least(1)},

      {.table = "eval",
       .key = "batch",
       .field = &member<&C::eval, &EvalConfig::batch>,
       .doc = "images per rank per evaluation step",
       .bound = at_least(1),
       .also = {"batch_size"}},
      {.table = "eval",
       .key = "every_epochs",
       .field = &member<&C::eval, &EvalConfig::every_epochs>,
       .doc = "evaluate after every this many epochs",
       .bound = at_least(1)},

      {.table = "log",
       .key = "every_steps",
       .field = &member<&C::log, &LogConfig::every_steps>,
       .doc = "plain progress lines and metric records",
       .bound = at_least(1),
       .also = {"interval", "log_interval"}},
      {.table = "log",
       .key = "metrics",
       .field = &member<&C::log, &LogConfig::metrics>,
       .doc = "JSON-lines file, relative to checkpoint.dir; \"\" disables"},
      {.table = "log",
       .key = "progress",
       .field = &member<&C::log, &LogConfig::progress>,
       .doc = "how progress is shown",
       .choices = {"auto", "bar", "lines", "none"}},

      {.table = "log",
       .key = "timeline",
       .field = &member<&C::log, &LogConfig::timeline>,
       .doc = "Chrome-trace JSON file of a few steps (Perfetto, chrome://tracing); \"\" disables",
       .also = {"trace"}},
      {.table = "log",
       .key = "timeline_first_step",
       .field = &member<&C::log, &LogConfig::timeline_first_step>,
       .doc = "first traced step of this run",
       .bound = at_least(0)},
      {.table = "log",
       .key = "timeline_steps",
       .field = &member<&C::log, &LogConfig::timeline_steps>,
       .doc = "number of traced steps",
       .bound = at_least(1)},
      {.table = "log",
       .key = "timeline_max_mb",
       .field = &member<&C::log, &LogConfig::timeline_max_mb>,
       .doc = "stop tracing once the file reaches this many MiB",
       .bound = above(0)},

      {.table = "checkpoint",
       .key = "dir",
       .field = &member<&C::checkpoint, &CheckpointConfig::dir>,
       .doc = "created if missing; must be writable",
       .non_empty = true,
       .also = {"path", "output_dir", "save_dir"}},
      {.table = "checkpoint",
       .key = "every_epochs",
       .field = &member<&C::checkpoint, &CheckpointConfig::every_epochs>,
       .doc = "save after every this many epochs",
       .bound = at_least(1),
       .also = {"save_every"}},
  };
  return schema;
}

// The tables in schema order.
inline std::vector<std::string_view> table_names() {
  std::vector<std::string_view> names;
  for (const KeySpec& s : config_schema())
    if (names.empty() || names.back() != s.table) names.push_back(s.table);
  return names;
}

inline bool is_table(std::string_view name) {
  auto names = table_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The entry for table.key, or nullptr.
inline const KeySpec* find_key(std::string_view table, std::string_view key) {
  for (const KeySpec& s : config_schema())
    if (s.table == table && s.key == key) return &s;
  return nullptr;
}

// "table.key", as messages and to_toml's readers know it.
inline std::string full_name(const KeySpec& s) { return std::string(s.table) + "." + std::string(s.key); }

}  // namespace rt
