#include "app/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "formats/atomic_file.h"
#include "base/check.h"

namespace rt {
namespace {

constexpr const char* kFormat = "ringtrain-checkpoint-1";

StTensor counter_tensor(int64_t v) {
  StTensor t;
  t.dtype = DType::kI64;
  t.bytes.resize(8);
  std::memcpy(t.bytes.data(), &v, 8);
  return t;
}

void check_shape(const StTensor& t, const Shape& want, const std::string& name, const std::string& source) {
  RT_CHECK(t.shape == want, source, ": tensor '", name, "' has shape ", shape_str(t.shape), ", the model expects ",
           shape_str(want));
}

void copy_into(Tensor& dst, const StTensor& t, const std::string& name, const std::string& source) {
  check_shape(t, dst.shape(), name, source);
  const std::vector<float> values = as_f32(t, str_cat(source, ": tensor '", name, "'"));
  // NaN or infinite weights would only show up later, as a loss or evaluation of nan.
  const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
  if (bad != values.end()) {
    const auto count = std::count_if(bad, values.end(), [](float v) { return !std::isfinite(v); });
    RT_CHECK(false, source, ": tensor '", name, "' holds ", count, " non-finite value(s) of ", values.size(),
             " (the first, ", *bad, ", at index ", bad - values.begin(),
             "); the run that saved it had diverged, or the file is damaged: use an earlier checkpoint");
  }
  copy_bytes(dst.data(), dst.device(), values.data(), Device::kCpu, values.size() * sizeof(float));
}

int64_t meta_int(const StFile& f, const char* key, const std::string& source) {
  const std::string v = f.meta(key);
  RT_CHECK(!v.empty(), source, ": metadata '", key, "' is missing");
  try {
    size_t used = 0;
    const int64_t x = std::stoll(v, &used);
    RT_CHECK(used == v.size(), source, ": metadata '", key, "' = '", v, "' is not an integer");
    return x;
  } catch (const std::logic_error&) {
    RT_CHECK(false, source, ": metadata '", key, "' = '", v, "' is not an integer");
  }
  return 0;
}

std::string sums_text(EpochSums sums) {
  std::string text;
  for (int i = 0; i < EpochSums::kCount; ++i) {
    char v[32];
    std::snprintf(v, sizeof v, "%.17g", sums.data()[i]);  // reads back to the same double
    if (i > 0) text += ' ';
    text += v;
  }
  return text;
}

EpochSums sums_of(const std::string& text, const std::string& source) {
  EpochSums sums;
  const char* p = text.c_str();
  for (int i = 0; i < EpochSums::kCount; ++i) {
    char* end = nullptr;
    sums.data()[i] = std::strtod(p, &end);
    RT_CHECK(end != p && std::isfinite(sums.data()[i]), source, ": metadata 'epoch_sums' = '", text, "' is not ",
             EpochSums::kCount, " numbers");
    p = end;
  }
  RT_CHECK(*p == '\0', source, ": metadata 'epoch_sums' = '", text, "' has more than ", EpochSums::kCount, " numbers");
  return sums;
}

TrainingPosition position_of(const StFile& f, const std::string& path) {
  TrainingPosition pos;
  pos.epochs_done = meta_int(f, "epochs_done", path);
  pos.step = meta_int(f, "step", path);
  pos.images_seen = meta_int(f, "images_seen", path);
  pos.seed = meta_int(f, "seed", path);
  // Checkpoints from before mid-epoch saves fall on epoch ends.
  if (!f.meta("epoch_positions").empty()) pos.epoch_positions = meta_int(f, "epoch_positions", path);
  if (const std::string s = f.meta("epoch_sums"); !s.empty()) pos.epoch_sums = sums_of(s, path);
  if (const std::string s = f.meta("run_seconds"); !s.empty()) {  // absent before time to target
    char* end = nullptr;
    pos.run_seconds = std::strtod(s.c_str(), &end);
    RT_CHECK(*end == '\0' && pos.run_seconds >= 0 && std::isfinite(pos.run_seconds), path,
             ": metadata 'run_seconds' = '", s, "' is not a finite number >= 0");
  }
  if (const std::string s = f.meta("loss_scale"); !s.empty()) {
    char* end = nullptr;
    pos.loss_scale = std::strtod(s.c_str(), &end);
    RT_CHECK(*end == '\0' && pos.loss_scale > 0 && std::isfinite(pos.loss_scale), path, ": metadata 'loss_scale' = '",
             s, "' is not a positive finite number");
  }
  if (const std::string s = f.meta("tuned_buckets"); !s.empty())
    pos.tuned_buckets = BucketCaps::parse(s, str_cat(path, ": metadata 'tuned_buckets'"));
  if (const std::string s = f.meta("bucket_trials"); !s.empty()) {
    try {
      pos.bucket_trials = parse_autotune_trials(s);
    } catch (const Error& e) {
      RT_CHECK(false, path, ": metadata 'bucket_trials': ", e.what());
    }
  }
  return pos;
}

// "optimizer.momentum.conv1.weight": state k of a parameter, as checkpoints name it.
std::string state_tensor_name(const Optimizer& optimizer, size_t k, const std::string& param) {
  return kOptimizerPrefix + optimizer.state_name(k) + "." + param;
}

}  // namespace

StTensor f32_tensor_of(const Tensor& t) {
  if (t.device() == Device::kCpu) return make_f32_tensor(t.shape(), t.data());
  const Tensor host = to_device(t, Device::kCpu);
  return make_f32_tensor(host.shape(), host.data());
}

StFile model_state(const Graph& graph) {
  StFile f;
  for (const ParamRef& p : graph.params()) f.tensors.push_back({p.name, f32_tensor_of(p.value)});
  for (const BufferRef& b : graph.buffers()) f.tensors.push_back({b.name, f32_tensor_of(b.value)});
  for (const CounterRef& c : graph.counters()) f.tensors.push_back({c.name, counter_tensor(*c.value)});
  return f;
}

void load_model_state(Graph& graph, const StFile& file, const std::string& source) {
  // Every mismatch is collected first, so one message shows what kind of file this is (another
  // model, another num_classes, a non-torchvision naming) rather than only its first symptom.
  std::vector<std::string> problems;
  std::set<std::string> expected;
  const auto want = [&](const std::string& name, const Shape& shape, bool optional) {
    expected.insert(name);
    const StTensor* t = file.find(name);
    if (!t && !optional) problems.push_back(str_cat("missing '", name, "' ", shape_str(shape)));
    if (t && t->shape != shape)
      problems.push_back(str_cat("'", name, "' is ", shape_str(t->shape), ", the model expects ", shape_str(shape)));
  };
  for (const ParamRef& p : graph.params()) want(p.name, p.value.shape(), false);
  for (const BufferRef& b : graph.buffers()) want(b.name, b.value.shape(), false);
  // Counters are optional, as in PyTorch's own loader for old checkpoints.
  for (const CounterRef& c : graph.counters()) want(c.name, {}, true);
  for (const auto& [name, t] : file.tensors)
    if (!expected.count(name) && name.rfind("optimizer.", 0) != 0)
      problems.push_back(str_cat("unexpected '", name, "' ", shape_str(t.shape), " (the model has no such tensor)"));
  if (!problems.empty()) {
    constexpr size_t kShown = 6;
    std::string list;
    for (size_t i = 0; i < std::min(kShown, problems.size()); ++i) list += "\n  " + problems[i];
    if (problems.size() > kShown) list += str_cat("\n  ... and ", problems.size() - kShown, " more");
    RT_CHECK(false, source, ": ", problems.size(), " tensor(s) do not match the model:", list);
  }
  for (ParamRef& p : graph.params()) copy_into(p.value, *file.find(p.name), p.name, source);
  for (const BufferRef& b : graph.buffers()) {
    Tensor view = b.value;
    copy_into(view, *file.find(b.name), b.name, source);
  }
  for (const CounterRef& c : graph.counters()) {
    const StTensor* t = file.find(c.name);
    if (!t) continue;
    RT_CHECK(t->dtype == DType::kI64 && t->bytes.size() == 8, source, ": counter '", c.name, "' must be one int64");
    std::memcpy(c.value, t->bytes.data(), 8);
  }
}

std::string save_checkpoint(const std::string& dir, const Graph& graph, Optimizer& optimizer,
                            const TrainingPosition& pos, const std::string& model_name,
                            const std::string& resolved_config, int64_t keep) {
  StFile f = model_state(graph);
  for (size_t k = 0; k < optimizer.state_count(); ++k)
    for (size_t i = 0; i < graph.params().size(); ++i)
      f.tensors.push_back(
          {state_tensor_name(optimizer, k, graph.params()[i].name), f32_tensor_of(optimizer.state(k, i))});
  f.metadata = {{"format", kFormat},
                {"model", model_name},
                {"epochs_done", std::to_string(pos.epochs_done)},
                {"step", std::to_string(pos.step)},
                {"images_seen", std::to_string(pos.images_seen)},
                {"seed", std::to_string(pos.seed)},
                {"epoch_positions", std::to_string(pos.epoch_positions)},
                {"epoch_sums", sums_text(pos.epoch_sums)},
                {"run_seconds", str_cat(pos.run_seconds)},
                {"config", resolved_config}};
  if (pos.loss_scale > 0) {
    char scale[32];
    std::snprintf(scale, sizeof scale, "%.17g", pos.loss_scale);  // reads back to the same double
    f.metadata.push_back({"loss_scale", scale});
  }
  if (pos.tuned_buckets) f.metadata.push_back({"tuned_buckets", pos.tuned_buckets->text()});
  if (!pos.bucket_trials.empty()) f.metadata.push_back({"bucket_trials", autotune_trials_text(pos.bucket_trials)});
  const std::string path = numbered_checkpoint_path(dir, pos.images_seen);
  write_safetensors(path, f);
  publish_checkpoint(dir, path, keep);
  return path;
}

TrainingPosition read_training_position(const std::string& path) {
  return position_of(read_safetensors_metadata(path), path);
}

TrainingPosition load_checkpoint(const std::string& dir, Graph& graph, Optimizer& optimizer,
                                 const std::string& model_name) {
  const std::string path = newest_checkpoint(dir);
  RT_CHECK(!path.empty(), "cannot resume from '", dir, "': it has no checkpoint (checkpoint-<N>.safetensors or ",
           kCheckpointFile, ")");
  const StFile f = read_safetensors(path);
  RT_CHECK(f.meta("format") == kFormat, path, ": not a ringtrain checkpoint (format '", f.meta("format"),
           "', expected '", kFormat, "')");
  RT_CHECK(f.meta("model") == model_name, path, ": checkpoint is of model '", f.meta("model"),
           "', the config asks for '", model_name, "'");
  load_model_state(graph, f, path);
  for (size_t k = 0; k < optimizer.state_count(); ++k)
    for (size_t i = 0; i < graph.params().size(); ++i) {
      const std::string name = state_tensor_name(optimizer, k, graph.params()[i].name);
      const StTensor* t = f.find(name);
      RT_CHECK(t, path, ": tensor '", name, "' is missing");
      copy_into(optimizer.state(k, i), *t, name, path);
    }
  return position_of(f, path);
}

}  // namespace rt
