// Loading, validating and printing the run configuration, all driven by the schema in
// config/config_schema.h through config/schema_loader.h, plus the rules that tie keys together.
#include "config/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "base/bucket_caps.h"
#include "base/check.h"
#include "base/join.h"
#include "base/signal_names.h"
#include "config/config_schema.h"
#include "config/schema_loader.h"

namespace rt {
namespace {

using schema_detail::describe;
using schema_detail::format_value;

// A rule that ties keys together, broken: the key to blame and the key it was judged against
// (the problem is reported where the later of the two values came from: an override that broke
// the rule names itself), and what is wrong.
struct Broken {
  std::string_view table, key;
  std::string_view other_table, other_key;
  std::string message;
};

// The rules that need no world, on the final values (after every override): every command that
// reads a config refuses the same settings, with the same words, before any work.
std::vector<Broken> broken_rules(const Config& c) {
  std::vector<Broken> broken;
  // rule(holds, "table.key to blame", "table.key judged against", message...)
  const auto rule = [&](bool holds, std::string_view blamed, std::string_view against, auto&&... message) {
    if (holds) return;
    const size_t b = blamed.find('.'), a = against.find('.');
    broken.push_back(
        {blamed.substr(0, b), blamed.substr(b + 1), against.substr(0, a), against.substr(a + 1), str_cat(message...)});
  };
  const DataConfig& d = c.data;
  const TrainConfig& t = c.train;
  const DistConfig& dist = c.dist;
  const std::string_view wire = name_of(dist.wire);
  rule(d.mean.size() == d.std.size() || d.mean.empty() || d.std.empty(), "data.mean", "data.std", "'data.mean' has ",
       d.mean.size(), " values but 'data.std' has ", d.std.size(), ": give one of each per channel");
  for (const auto& [name, range] : {std::pair{"data.crop_scale", &d.crop_scale}, {"data.crop_ratio", &d.crop_ratio}})
    rule(range->size() == 2 && (*range)[0] <= (*range)[1], name, name, "'", name, "' must be [lowest, highest], got ",
         range->size(), " value(s)", range->size() == 2 ? " in decreasing order" : "");
  if (decodes_images(d.source)) {
    rule(d.channels == 1 || d.channels == 3, "data.channels", "data.channels", "'data.channels' must be 1 or 3, got ",
         d.channels);
    rule(static_cast<int64_t>(d.mean.size()) == d.channels, "data.mean", "data.mean", "'data.mean' has ", d.mean.size(),
         " value(s) but data.channels = ", d.channels,
         d.channels == 3 ? " (ImageNet's: mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225])" : "");
  }
  rule(c.finetune.partial.empty() || !c.finetune.weights.empty(), "finetune.partial", "finetune.weights",
       "finetune.partial applies to the tensors of finetune.weights, which is not set");
  if (t.device == Device::kCpu) {
    rule(t.precision == Precision::kFp32 || t.precision == Precision::kBf16, "train.precision", "train.device",
         "train.precision = \"", name_of(t.precision),
         "\" applies to device = \"cuda\" only; the CPU computes in fp32 or bf16");
    rule(dist.allreduce != Allreduce::kNccl, "dist.allreduce", "train.device",
         "dist.allreduce = \"nccl\" needs train.device = \"cuda\"; on the CPU use ring or mpi");
    rule(t.cudnn_graph == CudnnGraphUse::kNever, "train.cudnn_graph", "train.device", "train.cudnn_graph = \"",
         name_of(t.cudnn_graph), "\" applies to device = \"cuda\" only: it chooses cuDNN's convolutions");
    rule(!t.cuda_graph, "train.cuda_graph", "train.device",
         "train.cuda_graph = true needs train.device = \"cuda\": the CPU runs each op as it is called");
  } else {
    rule(dist.allreduce != Allreduce::kMpi, "dist.allreduce", "train.device",
         "dist.allreduce = \"mpi\" moves host memory; with device = \"cuda\" use ring (ours, over NCCL "
         "point-to-point) or nccl (ncclAllReduce)");
    rule(dist.transport == TransportChoice::kAuto, "dist.transport", "train.device", "dist.transport = \"",
         name_of(dist.transport),
         "\" moves host memory; with device = \"cuda\" the ring moves GPU memory with NCCL (leave "
         "dist.transport = \"auto\")");
  }
  rule(!t.cuda_graph || t.bn_group == 1, "train.cuda_graph", "train.bn_group",
       "train.cuda_graph replays a recorded step, and train.bn_group = ", t.bn_group,
       " averages over NCCL calls the watchdog follows one by one: leave cuda_graph off");
  rule(!t.cuda_graph || t.accumulate_steps == 1, "train.cuda_graph", "train.accumulate_steps",
       "train.cuda_graph replays one forward and backward per step; with train.accumulate_steps = ", t.accumulate_steps,
       " leave it off");
  rule(t.lr == 0 || t.lr_per_256 == 0, "train.lr", "train.lr_per_256", "train.lr = ", t.lr,
       " gives the rate for the whole global batch and train.lr_per_256 = ", t.lr_per_256,
       " one scaled by it: give one of the two (the other = 0)");
  rule(t.lr > 0 || t.lr_per_256 > 0, "train.lr_per_256", "train.lr",
       "no learning rate: give train.lr_per_256 (scaled by the global batch) or train.lr (for the whole of it)");
  const ScheduleConfig& s = c.schedule;
  rule(s.decay_epochs == 0 || s.decay_steps == 0, "schedule.decay_steps", "schedule.decay_epochs",
       "schedule.decay_epochs = ", s.decay_epochs, " and schedule.decay_steps = ", s.decay_steps,
       " both give the decay's length: give one of the two");
  rule(s.end_lr == 0 || s.final_fraction == 0, "schedule.end_lr", "schedule.final_fraction",
       "schedule.end_lr = ", s.end_lr, " and schedule.final_fraction = ", s.final_fraction,
       " both give the final rate: give one of the two");
  if (c.log.mlperf) {
    const MlperfConfig& m = c.mlperf;
    rule(!m.submission_org.empty(), "mlperf.submission_org", "log.mlperf",
         "log.mlperf = true: MLPerf's log names the submitting organisation; set mlperf.submission_org");
    rule(!m.submission_platform.empty(), "mlperf.submission_platform", "log.mlperf",
         "log.mlperf = true: MLPerf's log names the system; set mlperf.submission_platform");
    rule(c.model.name == "resnet50" || m.submission_division == MlperfDivision::kOpen, "model.name",
         "mlperf.submission_division",
         "log.mlperf = true: MLPerf's closed division trains ResNet-50 for image classification, model.name = \"",
         c.model.name, "\"; the open division may train another (mlperf.submission_division = \"open\")");
    rule(s.kind == ScheduleKind::kPoly, "schedule.kind", "log.mlperf",
         "log.mlperf = true: MLPerf's ResNet rules name a polynomial decay (schedule.kind = \"poly\"), got \"",
         name_of(s.kind), "\"");
    rule(c.eval.target_top1 > 0, "eval.target_top1", "log.mlperf",
         "log.mlperf = true: an MLPerf result is the time to a target; set eval.target_top1 (ResNet-50: 0.759)");
  }
  rule(c.eval.offset_epochs <= c.train.epochs, "eval.offset_epochs", "train.epochs",
       "eval.offset_epochs = ", c.eval.offset_epochs, " is past the last epoch (train.epochs = ", c.train.epochs, ")");
  if (dist.allreduce != Allreduce::kRing) {  // a library's own allreduce, for comparison
    const bool mpi = dist.allreduce == Allreduce::kMpi;
    const char* library =
        mpi ? "MPI_Allreduce (dist.allreduce = \"mpi\")" : "ncclAllReduce (dist.allreduce = \"nccl\")";
    rule(dist.hierarchy != Hierarchy::kTwoLevel, "dist.hierarchy", "dist.allreduce",
         "dist.hierarchy = \"two_level\" applies to ringtrain's ring; ", library,
         mpi ? " runs the MPI library's own algorithm" : " chooses its own rings and trees");
    rule(dist.wire == Wire::kFp32, "dist.wire", "dist.allreduce", "dist.wire = \"", wire,
         "\" applies to ringtrain's ring; ", library, mpi ? " sums in float32 on the wire" : " moves float32");
  }
  if (dist.compression == Compression::kPowerSgd) {
    rule(t.precision != Precision::kFp16, "dist.compression", "train.precision",
         "dist.compression = \"powersgd\" with train.precision = \"fp16\": a step whose scaled gradients "
         "overflow would leave inf in every later step's error feedback");
  }
  if (dist.autotune == Autotune::kOn || dist.autotune == Autotune::kReplay) {
    const std::string setting = str_cat("dist.autotune = \"", name_of(dist.autotune), "\"");
    rule(!fixes_buckets(dist.compression), "dist.autotune", "dist.compression", setting,
         " with dist.compression = \"powersgd\": PowerSGD's errors and Q's follow the buckets it was made with");
    rule(t.device == Device::kCpu, "dist.autotune", "train.device", setting,
         " on the GPU: the tuner times each bucket's average on the host, where the GPU's collective only enqueues "
         "it (not yet supported)");
  }
  if (dist.autotune == Autotune::kReplay) {
    try {
      parse_autotune_trials(dist.autotune_trials);
    } catch (const Error& e) {
      rule(false, "dist.autotune_trials", "dist.autotune", "dist.autotune = \"replay\": ", e.what());
    }
  }
  try {
    parse_signal_list(c.checkpoint.signals);
  } catch (const Error& e) {
    rule(false, "checkpoint.signals", "checkpoint.signals", "'checkpoint.signals': ", e.what());
  }
  return broken;
}

}  // namespace

Config parse_config(const std::string& text, const std::string& source_name,
                    const std::vector<std::string>& overrides) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    throw Error(str_cat(source_name, ":", e.source().begin.line, ":", e.source().begin.column, ": ", e.description()));
  }
  SchemaLoader<Config> loader(source_name, config_schema());
  loader.apply_document(root);
  for (size_t i = 0; i < overrides.size(); ++i) loader.apply_override(overrides[i], i);
  // A rate given absolutely replaces the per-256 one's default (the resolved config then says 0).
  if (loader.given("train", "lr") && !loader.given("train", "lr_per_256")) loader.value().train.lr_per_256 = 0;
  loader.validate();
  // A rule is judged on values that all loaded: a misspelt word leaves its key at the default,
  // against which another key's rule would say something untrue.
  if (!loader.failed()) {
    for (const Broken& b : broken_rules(loader.value())) {
      const auto& at = loader.origin_of(b.table, b.key);
      const auto& other = loader.origin_of(b.other_table, b.other_key);
      loader.fail(other.rank > at.rank ? other : at, b.message);
    }
  }
  return loader.finish();
}

namespace {

Config read_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(str_cat("cannot read config '", path, "': ", std::strerror(errno)));
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  int read_errno = std::ferror(f) ? errno : 0;  // a directory opens but fails here (EISDIR)
  std::fclose(f);
  if (read_errno) throw Error(str_cat("cannot read config '", path, "': ", std::strerror(read_errno)));
  return parse_config(text, path, overrides);
}

}  // namespace

// Note [Exit statuses] in base/check.h: every error here is the config's.
Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  return errors_as<ConfigError>([&] { return read_config(path, overrides); });
}

void check_rules(const Config& config) {
  const std::vector<Broken> broken = broken_rules(config);
  RT_CHECK(broken.empty(), broken.empty() ? "" : broken.front().message);
}

std::string to_toml(const Config& config) {
  Config c = config;  // the schema hands out references into a mutable Config
  std::string out = "# ringtrain configuration, fully resolved: every key, defaults included.\n";
  std::string_view table;
  std::vector<std::pair<std::string, std::string>> lines;  // ("key = value", comment) of a table
  auto flush = [&] {
    size_t width = 0;
    for (const auto& [kv, _] : lines) width = std::max(width, std::min<size_t>(kv.size(), 40));
    for (const auto& [kv, comment] : lines)
      out += str_cat(kv, std::string(width > kv.size() ? width - kv.size() : 0, ' '), "  # ", comment, "\n");
    lines.clear();
  };
  for (const KeySpec& spec : config_schema()) {
    if (spec.table != table) {
      flush();
      table = spec.table;
      out += str_cat("\n[", table, "]\n");
    }
    std::string value = std::visit([&](auto ref) { return format_value(ref(c)); }, spec.field);
    std::string rule = std::holds_alternative<EnumFieldOf<Config>>(spec.field)
                           ? str_cat("one of: ", join(std::get<EnumFieldOf<Config>>(spec.field)(c).names, ", "))
                           : describe(spec.bound);
    if (std::holds_alternative<FieldRef<std::vector<double>>>(spec.field)) {
      if (!rule.empty()) rule = "each " + rule;
      if (spec.increasing) rule += ", strictly increasing";
    }
    lines.emplace_back(str_cat(spec.key, " = ", value),
                       rule.empty() ? std::string(spec.doc) : str_cat(spec.doc, " (", rule, ")"));
  }
  flush();
  return out;
}

}  // namespace rt
