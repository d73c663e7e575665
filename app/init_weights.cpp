#include "app/init_weights.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "app/checkpoint.h"
#include "app/finetune.h"
#include "base/check.h"
#include "formats/safetensors.h"

namespace rt {
namespace {

bool under_any(const std::string& name, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return name_under(name, p); });
}

std::string list_of(const std::vector<std::string>& items, size_t shown) {
  std::string list;
  for (size_t i = 0; i < std::min(shown, items.size()); ++i) list += "\n  " + items[i];
  if (items.size() > shown) list += str_cat("\n  ... and ", items.size() - shown, " more");
  return list;
}

// One tensor of the model: where it goes, and its shape.
struct Target {
  std::string name;
  Shape shape;
  Tensor* value = nullptr;  // a parameter or buffer
  int64_t* counter = nullptr;
};

}  // namespace

InitWeights load_init_weights(Graph& graph, const FinetuneConfig& finetune, const std::string& model_name) {
  InitWeights r;
  r.path = finetune.weights;
  const std::string source = "finetune.weights '" + r.path + "'";
  StFile file;
  try {
    file = read_safetensors(r.path);
  } catch (const Error& e) {
    throw Error(str_cat("finetune.weights: ", e.what()));
  }
  const std::string saved_model = file.meta("model");
  RT_CHECK(saved_model.empty() || saved_model == model_name, source, " is a ringtrain checkpoint of model '",
           saved_model, "', the config asks for '", model_name, "'");

  std::vector<Target> targets;
  std::vector<Tensor> buffer_views;
  for (const BufferRef& b : graph.buffers()) buffer_views.push_back(b.value);
  for (ParamRef& p : graph.params()) targets.push_back({p.name, p.value.shape(), &p.value, nullptr});
  for (size_t i = 0; i < graph.buffers().size(); ++i)
    targets.push_back({graph.buffers()[i].name, buffer_views[i].shape(), &buffer_views[i], nullptr});
  for (const CounterRef& c : graph.counters()) targets.push_back({c.name, {}, nullptr, c.value});

  const std::vector<std::string> heads = graph.head_layers(), partial = name_list(finetune.partial);
  std::vector<std::string> problems;
  std::vector<const Target*> load;
  std::set<std::string> used, named;  // loaded; and with a name of the model's
  for (const Target& t : targets) {
    const StTensor* in = file.find(t.name);
    if (in) named.insert(t.name);
    if (in && in->shape == t.shape) {
      used.insert(t.name);
      load.push_back(&t);
      continue;
    }
    const std::string why = in ? str_cat(shape_str(in->shape), " in the file, ", shape_str(t.shape), " here")
                               : str_cat("not in the file, ", shape_str(t.shape), " here");
    if (t.counter && !in) continue;  // optional, as in PyTorch's loader
    if (under_any(t.name, heads))
      r.fresh.push_back(str_cat(t.name, ": new head (", why, ")"));
    else if (under_any(t.name, partial))
      r.fresh.push_back(str_cat(t.name, ": finetune.partial (", why, ")"));
    else
      problems.push_back(str_cat(t.name, ": ", why));
  }
  for (const auto& [name, t] : file.tensors) {
    if (name.rfind(kOptimizerPrefix, 0) == 0)
      ++r.optimizer_tensors;
    else if (!used.count(name))
      r.unused.push_back(str_cat(name, " ", shape_str(t.shape)));
  }
  if (!problems.empty()) {
    const bool foreign = load.empty() || named.size() * 2 < targets.size();
    RT_CHECK(false, source, ": ", problems.size(), " tensor(s) of ", model_name,
             " outside its classifier do not fit:", list_of(problems, 6),
             foreign ? str_cat("\n(", named.size(), " of the model's ", targets.size(),
                               " tensor names are in the file: is it of another model?)")
                     : std::string(),
             "\nname their prefixes in finetune.partial to start them from their initialisation instead");
  }
  // Everything is checked before anything is written: a failure leaves the graph as it was.
  std::vector<Tensor> staged(load.size());  // on the host; a counter's stays empty
  for (size_t k = 0; k < load.size(); ++k) {
    const StTensor& in = *file.find(load[k]->name);
    if (load[k]->counter)
      RT_CHECK(in.dtype == DType::kI64 && in.bytes.size() == 8, source, ": counter '", load[k]->name,
               "' must be one int64");
    else
      copy_into(staged[k] = Tensor(plain_spec(load[k]->shape, Device::kCpu)), in, load[k]->name, source);
  }
  for (size_t k = 0; k < load.size(); ++k) {
    if (load[k]->counter)
      std::memcpy(load[k]->counter, file.find(load[k]->name)->bytes.data(), 8);
    else
      copy_bytes(load[k]->value->data(), load[k]->value->device(), staged[k].data(), Device::kCpu, staged[k].bytes());
  }
  r.loaded = static_cast<int64_t>(load.size());
  r.tensors = static_cast<int64_t>(targets.size());
  return r;
}

std::string describe(const InitWeights& init) {
  std::string s = str_cat("ringtrain: started from ", init.path, " (finetune.weights): ", init.loaded,
                          " of the model's ", init.tensors, " tensors loaded");
  s += init.fresh.empty() ? "\n"
                          : str_cat(", ", init.fresh.size(), " at their initialisation:", list_of(init.fresh, 8), "\n");
  if (!init.unused.empty())
    s += str_cat("ringtrain: ", init.unused.size(), " of the file's tensors not used:", list_of(init.unused, 8), "\n");
  if (init.optimizer_tensors > 0)
    s += str_cat("ringtrain: the file's optimizer state (", init.optimizer_tensors,
                 " tensors) not used: a fine-tune starts the optimizer, step and schedule afresh\n");
  return s;
}

}  // namespace rt
