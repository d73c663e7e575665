// The run configuration: TOML tables mirror these structs one to one (table [train] -> TrainConfig).
// Loading is strict: unknown keys, wrong types and out-of-range values are rt::Error naming the
// file, line and key. Defaults below are the values a key takes when the file leaves it out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rt {

struct ModelConfig {
  std::string name = "lenet";  // a name from the model table (models/registry.h)
  int64_t num_classes = 10;    // >= 2
  double dropout = 0.0;        // [0, 1): probability of zeroing, where the model has dropout
  bool aux_logits = true;      // Inception-v3's auxiliary classifier (loss weight 0.4); others ignore it
  bool operator==(const ModelConfig&) const = default;
};

struct DataConfig {
  std::string source =
      "idx";               // "idx" (MNIST-format files) | "imagefolder" | "synthetic" (one random batch; bench only)
  int64_t image_size = 0;  // synthetic, imagefolder: square input side; 0 = the model's usual size
  std::string dir = "/usr/share/datasets/fashion-mnist";  // folder of the four files below, or of the two folders
  std::string train_images = "train-images-idx3-ubyte.gz";
  std::string train_labels = "train-labels-idx1-ubyte.gz";
  std::string test_images = "t10k-images-idx3-ubyte.gz";
  std::string test_labels = "t10k-labels-idx1-ubyte.gz";
  std::vector<double> mean = {0.2860};  // per channel, applied to pixels scaled to [0, 1]
  std::vector<double> std = {0.3530};   // per channel, > 0
  std::string tail = "drop";            // "drop" | "pad": what a shard does with the last partial batch
  // imagefolder: ROOT/<class>/<file> trees, relative to dir; transforms as torchvision's ImageNet recipes
  std::string train_folder = "train";
  std::string val_folder = "val";
  int64_t channels = 3;     // 3 = RGB; 1 = luminance (gray data such as exported Fashion-MNIST)
  int64_t resize_size = 0;  // evaluation: shorter side before the centre crop; 0 = image_size x 256 / 224
  bool random_crop = true;  // training: random resized crop; false = the evaluation transform
  std::vector<double> crop_scale = {0.08, 1.0};             // random crop: area fraction range
  std::vector<double> crop_ratio = {3.0 / 4.0, 4.0 / 3.0};  // random crop: width / height range
  bool flip = true;                                         // training: horizontal flip with probability 1/2
  int64_t workers = 0;                     // decoding threads per rank; 0 = the rank's CPUs left over by compute (>= 1)
  int64_t prefetch = 4;                    // batches made ahead of the training loop
  std::string on_bad_file = "skip";        // "skip" (warn, count, go on) | "error" (stop naming the file)
  int64_t max_image_pixels = 178'956'970;  // >= 1: a file declaring more is a bad file, not decoded (Pillow's limit)
  bool rebuild_index = false;              // rescan the folders instead of reading the cached index
  bool operator==(const DataConfig&) const = default;
};

struct TrainConfig {
  int64_t epochs = 5;           // >= 1
  int64_t batch_per_rank = 64;  // images per rank per micro-batch (global batch = this x accumulate_steps x world size)
  int64_t accumulate_steps = 1;  // >= 1: micro-batches whose gradients are summed into one step
  double lr_per_256 = 0.1;       // learning rate for 256 images; scaled by global batch / 256
  double momentum = 0.9;         // [0, 1)
  bool nesterov = false;
  double weight_decay = 5e-4;      // >= 0
  bool decay_bias_and_bn = false;  // false: biases and batch-norm parameters get no weight decay
  double label_smoothing = 0.0;    // [0, 1)
  double clip_grad_norm = 0.0;     // >= 0: clip the averaged gradients to this global norm; 0 = off
  int64_t seed = 1;                // >= 0: weights, shuffling and dropout all derive from it
  int64_t threads = 0;             // compute threads per process; 0 = this rank's share of its CPUs (World::cpu_share)
  std::string device = "cpu";      // "cpu" | "cuda"
  std::string conv_algorithm = "direct";  // "direct" (exact) | "winograd" (3x3 stride 1: faster, rounds more)
  std::string precision = "fp32";         // "fp32" | "tf32" | "bf16" | "fp16" (all but fp32: CUDA only)
  bool cuda_graph = false;                // CUDA: record a step's device work once, replay it (Note [CUDA graph steps])
  std::string cudnn_graph = "off";        // CUDA convolutions by cuDNN's graph API: "off" | "where_faster" | "always"
  bool operator==(const TrainConfig&) const = default;
};

struct ScheduleConfig {
  std::string kind = "cosine";          // "constant" | "step" | "cosine"
  double warmup_epochs = 0.0;           // >= 0: linear ramp from 0 to the base rate
  std::vector<double> milestones = {};  // epochs, increasing, for "step"
  double factor = 0.1;                  // (0, 1]: multiplier at each milestone, for "step"
  double final_fraction = 0.0;          // [0, 1]: cosine ends at base x this
  bool operator==(const ScheduleConfig&) const = default;
};

struct DistConfig {
  std::string allreduce = "ring";  // "ring" (ringtrain's own) | "mpi" (MPI_Allreduce) | "nccl" (ncclAllReduce, cuda)
  std::string transport = "auto";  // the ring's: "auto" (shm on one host, else tcp) | "shm" | "tcp" | "mpi"
  std::string tcp_interface;       // tcp transport: the network interface to use ("" = any that reaches)
  std::string hierarchy = "auto";  // "auto" (two_level across hosts) | "flat" | "two_level" (Note [Two-level ring])
  std::string wire = "fp32";       // gradients on the ring's wire: "fp32" | "fp16" | "bf16" (sums stay float32)
  double bucket_mb = 25;           // >= 0: gradient bucket cap in MiB; 0 = one collective per tensor
  double first_bucket_mb = 1;      // > 0: cap of the first and last buckets (start early, finish soon after backward)
  bool overlap = true;             // run buckets during backward; false = all after backward
  bool sharded_update = true;      // SGD on each rank's finished share, parameters all-gathered (Note [Sharded update])
  double stall_warn_s = 60;        // > 0: report a collective waiting this long
  double stall_abort_s = 300;      // > 0: abort the job when a collective waits this long
  bool operator==(const DistConfig&) const = default;
};

struct BenchConfig {
  int64_t warmup_steps = 10;      // >= 0: untimed steps first
  int64_t windows = 10;           // >= 2: timed windows, one images/s figure each
  int64_t steps_per_window = 10;  // >= 1
  bool operator==(const BenchConfig&) const = default;
};

struct EvalConfig {
  int64_t batch = 500;       // >= 1
  int64_t every_epochs = 1;  // >= 1
  bool operator==(const EvalConfig&) const = default;
};

struct LogConfig {
  int64_t every_steps = 50;               // >= 1: plain progress lines and metric records
  std::string metrics = "metrics.jsonl";  // relative to checkpoint.dir; "" disables
  std::string progress = "auto";          // "auto" | "bar" | "lines" | "none"
  std::string timeline = "";              // Chrome-trace JSON path; "" disables
  int64_t timeline_first_step = 5;        // >= 0: first traced step (of this run)
  int64_t timeline_steps = 3;             // >= 1: steps traced
  double timeline_max_mb = 64;            // > 0: stop tracing when the file reaches this size
  bool operator==(const LogConfig&) const = default;
};

struct CheckpointConfig {
  std::string dir = "runs/default";         // created if missing; must be writable
  int64_t every_epochs = 1;                 // >= 1
  int64_t every_steps = 0;                  // >= 0: also save after every this many steps; 0 = off
  double every_minutes = 0;                 // >= 0: also save at the first step this long after the last save; 0 = off
  int64_t keep = 1;                         // >= 0: checkpoints kept, the newest; 0 = all
  std::string signals = "SIGTERM,SIGUSR1";  // save at the next step and stop (exit 75); "" = none
  double signal_grace_s = 0;                // >= 0: after a signal, give up saving after this long; 0 = never
  bool operator==(const CheckpointConfig&) const = default;
};

struct Config {
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  ScheduleConfig schedule;
  DistConfig dist;
  BenchConfig bench;
  EvalConfig eval;
  LogConfig log;
  CheckpointConfig checkpoint;
  bool operator==(const Config&) const = default;
};

// Reads FILE, then applies each override "table.key=value" (value in TOML syntax; a bare word is
// taken as a string). Throws rt::Error naming file, line and key on any problem.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// Same, from text; `source_name` is what error messages call the file.
Config parse_config(const std::string& text, const std::string& source_name,
                    const std::vector<std::string>& overrides = {});
// The fully resolved config as TOML, every key present: parse_config(to_toml(c), ...) == c.
std::string to_toml(const Config& config);

}  // namespace rt
