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

}  // namespace

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

namespace {

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

void load_model_state(Graph& graph, const StFile& file, const std::string& source, bool in_checkpoint) {
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
    if (!expected.count(name) && name.rfind(kOptimizerPrefix, 0) != 0 && !in_checkpoint)
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

void SavedModel::save(StFile& into) {
  StFile state = model_state(graph_);
  into.tensors.insert(into.tensors.end(), std::make_move_iterator(state.tensors.begin()),
                      std::make_move_iterator(state.tensors.end()));
  into.metadata.emplace_back("model", model_name_);
  into.metadata.emplace_back("config", resolved_config_);
}

void SavedModel::load(const StFile& from, const std::string& source) {
  RT_CHECK(from.meta("model") == model_name_, source, ": checkpoint is of model '", from.meta("model"),
           "', the config asks for '", model_name_, "'");
  load_model_state(graph_, from, source, /*in_checkpoint=*/true);
}

void SavedOptimizer::save(StFile& into) {
  for (size_t k = 0; k < optimizer_.state_count(); ++k)
    for (size_t i = 0; i < graph_.trainable_count(); ++i)
      into.tensors.push_back(
          {state_tensor_name(optimizer_, k, graph_.params()[i].name), f32_tensor_of(optimizer_.state(k, i))});
}

void SavedOptimizer::load(const StFile& from, const std::string& source) {
  for (size_t k = 0; k < optimizer_.state_count(); ++k)
    for (size_t i = 0; i < graph_.trainable_count(); ++i) {
      const std::string name = state_tensor_name(optimizer_, k, graph_.params()[i].name);
      const StTensor* t = from.find(name);
      RT_CHECK(t, source, ": tensor '", name, "' is missing");
      copy_into(optimizer_.state(k, i), *t, name, source);
    }
}

}  // namespace rt
