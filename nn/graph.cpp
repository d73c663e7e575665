#include "nn/graph.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include "base/check.h"
#include "base/rng.h"
#include "nn/memory_plan.h"
#include "nn/ops/add.h"

namespace rt {
namespace {

// Profiling's clock for backward (Graph::time_backward_layers): waits for the device around
// every layer and adds its time to its row; does nothing where `seconds` is null.
class LayerTimes {
 public:
  using Clock = std::chrono::steady_clock;
  LayerTimes(std::vector<double>* seconds, std::vector<double>* host_seconds, Device device, size_t layers)
      : seconds_(seconds), host_seconds_(host_seconds), device_(device) {
    if (!seconds_) return;
    seconds_->resize(layers, 0.0);
    if (host_seconds_) host_seconds_->resize(layers, 0.0);
    synchronize(device_);
    start_ = Clock::now();
  }
  // Layer `row` has issued its backward: the host's time to here, then the device's.
  void layer_done(size_t row) {
    if (!seconds_) return;
    if (host_seconds_) (*host_seconds_)[row] += std::chrono::duration<double>(Clock::now() - start_).count();
    synchronize(device_);
    const Clock::time_point now = Clock::now();
    (*seconds_)[row] += std::chrono::duration<double>(now - start_).count();
    start_ = now;
  }

 private:
  std::vector<double>* seconds_;
  std::vector<double>* host_seconds_;
  Device device_;
  Clock::time_point start_;
};

constexpr int64_t kAlignFloats = 16;  // 64 bytes: each parameter starts on a cache line

int64_t aligned_floats(const Shape& shape) { return (numel(shape) + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

uint64_t name_hash(const std::string& s) {  // FNV-1a: stable across platforms and releases
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Value i of a parameter takes its stream's draws at counters fixed by i (a normal takes two, a
// uniform one), so chunks fill in parallel on the caller's OpenMP threads and the values are the
// same bits at any thread count. One thread took 5.5 s for VGG-16's 138 million.
void draw_initial_values(float* out, int64_t n, const Init& init, uint64_t seed, uint64_t stream) {
  constexpr int64_t kChunk = int64_t{1} << 16;
  const uint64_t draws_per_value = init.kind == Init::Kind::kNormal ? 2 : 1;
#pragma omp parallel for schedule(static)
  for (int64_t start = 0; start < n; start += kChunk) {
    Rng rng(seed, stream, static_cast<uint64_t>(start) * draws_per_value);
    const int64_t end = std::min(n, start + kChunk);
    for (int64_t i = start; i < end; ++i) {
      switch (init.kind) {
        case Init::Kind::kConstant:
          out[i] = static_cast<float>(init.a);
          break;
        case Init::Kind::kUniform:
          out[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * init.a);
          break;
        case Init::Kind::kNormal:
          out[i] = static_cast<float>(rng.normal() * init.a);
          break;
      }
    }
  }
}

}  // namespace

Graph::Graph(Shape sample_shape) {
  Node input;
  input.name = "input";
  Shape s{1};
  s.insert(s.end(), sample_shape.begin(), sample_shape.end());
  input.y = Tensor(plain_spec(s));  // placeholder until plan() knows the batch
  nodes_.push_back(std::move(input));
}

int Graph::add(std::string name, std::unique_ptr<Layer> layer, std::vector<int> inputs) {
  RT_CHECK(!planned_, "cannot add '", name, "' to a graph that is already planned");
  RT_CHECK(!inputs.empty(), "layer '", name, "' has no inputs");
  std::set<int> distinct(inputs.begin(), inputs.end());
  RT_CHECK(distinct.size() == inputs.size(), "layer '", name, "' reads the same input twice");
  for (int i : inputs)
    RT_CHECK(i >= 0 && i < static_cast<int>(nodes_.size()), "layer '", name, "' reads node ", i,
             ", which does not exist yet (a graph is built in topological order)");
  for (const Node& n : nodes_) RT_CHECK(n.name != name, "two layers are named '", name, "'");
  for (int i : inputs) ++nodes_[i].consumers;
  Node node;
  node.name = std::move(name);
  node.layer = std::move(layer);
  node.inputs = std::move(inputs);
  nodes_.push_back(std::move(node));
  return static_cast<int>(nodes_.size()) - 1;
}

void Graph::add_output(int node, double loss_weight) {
  RT_CHECK(!planned_, "cannot add an output to a graph that is already planned");
  RT_CHECK(node > input() && node < static_cast<int>(nodes_.size()), "output node ", node, " does not exist");
  RT_CHECK(loss_weight >= 0, "output '", nodes_[node].name, "' has negative loss weight ", loss_weight);
  for (const ExtraOutput& o : outputs_) RT_CHECK(o.node != node, "'", nodes_[node].name, "' is an output twice");
  outputs_.push_back({node, loss_weight});
}

void Graph::plan(int64_t batch, Device device, bool training, const PlanContext& context) {
  RT_CHECK(!planned_, "graph planned twice");
  RT_CHECK(nodes_.size() > 1, "graph has no layers");
  RT_CHECK(batch >= 1, "batch must be >= 1, got ", batch);
  for (const ExtraOutput& o : outputs_)
    RT_CHECK(nodes_[o.node].consumers == 0 && o.node != static_cast<int>(nodes_.size()) - 1, "output '",
             nodes_[o.node].name, "' must be a node that no layer reads and not the main output");
  batch_ = batch;
  device_ = device;
  training_ = training;

  // Parameters in backward order (Note [Gradient arena]): last node's first, the trainable ones
  // before the frozen (Note [Frozen layers]).
  std::vector<std::vector<ParamSpec>> specs(nodes_.size());
  int64_t floats = 0;
  for (bool trainable : {true, false}) {
    for (size_t i = nodes_.size(); i-- > 1;) {
      Node& n = nodes_[i];
      if (n.frozen == trainable) continue;
      specs[i] = n.layer->param_specs();
      for (const ParamSpec& p : specs[i]) {
        ParamRef ref;
        ref.name = n.name + "." + p.name;
        ref.role = p.role;
        ref.init = p.init;
        ref.offset = floats;
        ref.trainable = trainable;
        n.params.push_back(params_.size());
        params_.push_back(ref);
        floats += aligned_floats(p.shape);
      }
    }
    if (trainable) grad_floats_ = floats, trainable_count_ = params_.size();
  }
  arena_floats_ = floats;
  // A graph planned for inference has no gradients (its views stay empty).
  const TensorSpec arena_spec = plain_spec({std::max<int64_t>(floats, 1)}, device);
  const TensorSpec grad_spec = plain_spec({std::max<int64_t>(grad_floats_, 1)}, device);
  if (training && arena_memory_) {
    std::shared_ptr<float> memory = arena_memory_(arena_spec.shape[0] + grad_spec.shape[0]);
    param_arena_ = Tensor(arena_spec, memory.get(), memory);
    grad_arena_ = Tensor(grad_spec, memory.get() + arena_spec.shape[0], memory);
  } else {
    param_arena_ = Tensor(arena_spec);
    if (training) grad_arena_ = Tensor(grad_spec);
  }

  // Bind views, then plan each node in topological order.
  std::vector<std::vector<Tensor>> values(nodes_.size()), grads(nodes_.size());
  for (size_t i = 1; i < nodes_.size(); ++i)
    for (size_t k = 0; k < specs[i].size(); ++k) {
      ParamRef& ref = params_[nodes_[i].params[k]];
      const TensorSpec spec = plain_spec(specs[i][k].shape, device);
      ref.value = Tensor(spec, param_arena_.data() + ref.offset, nullptr);
      if (training && ref.trainable) ref.grad = Tensor(spec, grad_arena_.data() + ref.offset, nullptr);
      values[i].push_back(ref.value);
      grads[i].push_back(ref.grad);
    }
  mark_backward();
  hand_relus_to_batch_norm(context);
  Shape in_shape = nodes_[0].y.shape();
  in_shape[0] = batch;
  nodes_[0].y = Tensor(plain_spec(in_shape, device));
  std::vector<TensorSpec> y_specs(nodes_.size());
  y_specs[0] = nodes_[0].y.spec();
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    std::vector<Tensor> bufs;
    for (const BufferSpec& b : n.layer->buffer_specs()) {
      bufs.emplace_back(plain_spec(b.shape, device));
      buffers_.push_back({n.name + "." + b.name, bufs.back(), n.frozen && !frozen_statistics_training_});
    }
    for (auto& [name, ptr] : n.layer->counters()) counters_.push_back({n.name + "." + name, ptr});
    n.layer->bind(values[i], grads[i], bufs);
    std::vector<TensorSpec> x;
    std::vector<bool> need_dx;
    for (int j : n.inputs) {
      x.push_back(y_specs[j]);
      need_dx.push_back(n.runs_backward && j != input() && nodes_[j].runs_backward);
    }
    try {
      y_specs[i] = n.layer->plan(x, need_dx, context);
    } catch (const Error& e) {
      throw Error(str_cat("layer '", n.name, "' (", n.layer->kind(), "): ", e.what()));
    }
  }
  allocate_activations(y_specs);
  plan_calls();
  planned_ = true;
}

// Note [ReLU in batch norm]: batch norm followed by ReLU (every convolution of Inception-v3, the
// first two of each ResNet bottleneck) is one oneDNN primitive with the ReLU fused: its forward
// writes max(0, y) and a bit an element where that is positive, its backward masks dy with the
// bits. Apart, the ReLU reads and writes the whole tensor once forward and, backward, reads it
// and its gradient and writes the input's gradient: a memory-bound pass as long as batch norm's
// own. Values and gradients are the same either way (the same mask, the same kernels), so the
// graph hands the ReLU to the batch norm wherever the batch norm's output has no other reader
// and the batch norm can take it (Layer::can_take_relu: on the CPU, statistics its own batch's).
// The ReLU then runs in place over the batch norm's output and shares its gradient's buffer
// (Note [Activation memory]), doing nothing.
void Graph::hand_relus_to_batch_norm(const PlanContext& context) {
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (n.inputs.size() != 1 || n.inputs[0] == input()) continue;
    Node& in = nodes_[n.inputs[0]];
    if (in.consumers == 1 && in.layer->can_take_relu(device_, context) && n.layer->give_relu_away())
      in.layer->take_relu();
  }
}

// Which tensors each layer reads and writes is a function of the graph alone, so forward and
// backward look them up instead of gathering them at every step. In backward (last node first)
// an input's first consumer writes its dy and later ones its dy_extra, added in after.
void Graph::plan_calls() {
  std::vector<bool> dy_written(nodes_.size(), false);
  for (size_t k = 0; k < output_count(); ++k) nodes_[output_node(k)].output = static_cast<int>(k);
  for (size_t i = nodes_.size(); i-- > 1;) {
    Node& n = nodes_[i];
    n.x.clear();
    n.dx.clear();
    n.add_extra.clear();
    n.zero_dy = n.runs_backward && n.output < 0 && !dy_written[i];
    for (int j : n.inputs) {
      Node& in = nodes_[j];
      n.x.push_back(&in.y);
      if (!n.runs_backward) continue;
      if (j == input() || !in.runs_backward) {
        n.dx.push_back(nullptr);
        continue;
      } else if (in.dy_shared) {
        n.dx.push_back(nullptr);  // its dy is n's own: the gradient is already there
      } else if (!dy_written[j]) {
        n.dx.push_back(&in.dy);
      } else {
        n.dx.push_back(&in.dy_extra);
        n.add_extra.push_back(j);
      }
      dy_written[j] = true;
    }
  }
}

// Note [Activation memory]: every output, gradient and second gradient lives in one arena, placed
// by plan_memory from its lifetime in steps (forward of node i is step i; backward of node i is
// step 2N - i, so backward runs from step N + 1 down the graph):
// - an output y lives from its forward to its last forward reader, and to the end of the step
//   when backward reads it (its own layer's backward_reads_output, or a reader's
//   backward_reads_inputs) or it is a graph output; an in-place layer (ReLU) that is its input's
//   only reader writes over that input, whose buffer then lives as long as either needs;
// - training only: a gradient dy is written by its last consumer's backward and read by its own
//   node's backward; dy_extra is live across its consumers' backward steps. Where that consumer
//   passes its gradient through (add) and is the node's only one, the node's dy is the
//   consumer's dy, in one buffer that lives until the node's backward: no copy, no second buffer
//   (down a chain of adds, one buffer serves them all).
void Graph::allocate_activations(const std::vector<TensorSpec>& y_specs) {
  const size_t count = nodes_.size();
  const int64_t n = static_cast<int64_t>(count), end = 2 * n;
  const auto backward_step = [&](int64_t i) { return 2 * n - i; };
  std::vector<int64_t> first_reader(count, n), last_reader(count, 0);
  std::vector<bool> keep(count, false);  // read in backward, or a graph output
  for (size_t k = 0; k < output_count(); ++k) keep[output_node(k)] = true;
  for (size_t i = 1; i < count; ++i) {
    const bool backward = nodes_[i].runs_backward;
    keep[i] = keep[i] || (backward && nodes_[i].layer->backward_reads_output());
    for (int j : nodes_[i].inputs) {
      first_reader[j] = std::min<int64_t>(first_reader[j], static_cast<int64_t>(i));
      last_reader[j] = std::max<int64_t>(last_reader[j], static_cast<int64_t>(i));
      keep[j] = keep[j] || (backward && nodes_[i].layer->backward_reads_inputs());
    }
  }
  std::vector<int64_t> y_last(count);
  for (size_t i = 1; i < count; ++i)
    y_last[i] = keep[i] ? end : std::max<int64_t>(static_cast<int64_t>(i), last_reader[i]);
  std::vector<size_t> owner(count);  // the node whose buffer y lives in: itself, or what it overwrote
  for (size_t i = 1; i < count; ++i) {
    owner[i] = i;
    const Node& node = nodes_[i];
    if (!node.layer->runs_in_place() || node.inputs.size() != 1) continue;
    const int j = node.inputs[0];
    if (j != input() && nodes_[j].consumers == 1 && !nodes_[j].layer->backward_reads_output() &&
        y_specs[j].same_as(y_specs[i])) {
      owner[i] = owner[j];
      y_last[owner[i]] = std::max(y_last[owner[i]], y_last[i]);
    }
  }

  // The node whose dy buffer each node's gradient lives in: its own, or (see above) its only
  // consumer's, found from the graph's end so chains resolve to their last link.
  std::vector<size_t> dy_owner(count);
  std::vector<int64_t> dy_last(count);
  std::vector<bool> is_output(count, false);
  for (size_t k = 0; k < output_count(); ++k) is_output[output_node(k)] = true;
  for (size_t i = 1; i < count; ++i) dy_owner[i] = i, dy_last[i] = backward_step(static_cast<int64_t>(i));
  for (size_t i = count; training_ && i-- > 1;) {
    const Node& node = nodes_[i];
    if (!node.runs_backward || !node.layer->passes_gradient_through() || is_output[i]) continue;
    for (int j : node.inputs) {
      if (j == input() || !nodes_[j].runs_backward || nodes_[j].consumers != 1 || is_output[j] ||
          !y_specs[j].same_as(y_specs[i]))
        continue;
      dy_owner[j] = dy_owner[i];
      dy_last[dy_owner[j]] = std::max(dy_last[dy_owner[j]], backward_step(j));
    }
  }

  enum class Kind { kY, kDy, kDyExtra };
  struct Request {
    size_t node;
    Kind kind;
  };
  std::vector<Request> requests;
  std::vector<BufferLifetime> lifetimes;
  const auto add = [&](size_t node, Kind kind, int64_t first, int64_t last) {
    requests.push_back({node, kind});
    lifetimes.push_back({y_specs[node].bytes(), first, last});
  };
  for (size_t i = 1; i < count; ++i) {
    const int64_t at = static_cast<int64_t>(i);
    if (owner[i] == i) add(i, Kind::kY, at, y_last[i]);
    const Node& node = nodes_[i];
    if (!node.runs_backward) continue;
    if (dy_owner[i] == i)
      add(i, Kind::kDy, node.consumers > 0 ? backward_step(last_reader[i]) : backward_step(at), dy_last[i]);
    if (node.consumers > 1) add(i, Kind::kDyExtra, backward_step(last_reader[i]), backward_step(first_reader[i]));
  }
  const MemoryPlan plan = plan_memory(lifetimes);
  activation_arena_ = Tensor(plain_spec({static_cast<int64_t>((plan.total_bytes + 3) / 4) + 1}, device_));
  char* base = reinterpret_cast<char*>(activation_arena_.data());
  for (size_t r = 0; r < requests.size(); ++r) {
    Node& node = nodes_[requests[r].node];
    Tensor view(y_specs[requests[r].node], reinterpret_cast<float*>(base + plan.offsets[r]), nullptr);
    switch (requests[r].kind) {
      case Kind::kY:
        node.y = view;
        break;
      case Kind::kDy:
        node.dy = view;
        break;
      case Kind::kDyExtra:
        node.dy_extra = view;
        break;
    }
  }
  for (size_t i = 1; i < count; ++i)
    if (owner[i] != i) nodes_[i].y = Tensor(y_specs[i], nodes_[owner[i]].y.data(), nullptr);
  for (size_t i = 1; i < count; ++i) {
    nodes_[i].dy_shared = dy_owner[i] != i;
    if (nodes_[i].dy_shared) nodes_[i].dy = Tensor(y_specs[i], nodes_[dy_owner[i]].dy.data(), nullptr);
  }
}

void Graph::init_parameters(uint64_t seed) {
  RT_CHECK(planned_, "init_parameters before plan");
  // Drawn in place on the CPU; on a GPU drawn on the host and copied.
  std::vector<float> host;
  for (ParamRef& p : params_) {
    const int64_t n = p.value.numel();
    float* out = p.value.data();
    if (device_ != Device::kCpu) {
      host.resize(static_cast<size_t>(n));
      out = host.data();
    }
    draw_initial_values(out, n, p.init, seed, name_hash(p.name));
    if (device_ != Device::kCpu) copy_bytes(p.value.data(), device_, host.data(), Device::kCpu, p.value.bytes());
  }
  size_t b = 0;
  for (size_t i = 1; i < nodes_.size(); ++i)
    for (const BufferSpec& spec : nodes_[i].layer->buffer_specs()) {
      Tensor& t = buffers_[b++].value;
      host.assign(static_cast<size_t>(t.numel()), spec.fill);
      copy_bytes(t.data(), device_, host.data(), Device::kCpu, t.bytes());
    }
  for (CounterRef& c : counters_) *c.value = 0;
}

const Tensor& Graph::forward(const float* images, const RunContext& ctx, Device images_on) {
  set_input(images, images_on);
  begin_forward(ctx);
  return forward_work(ctx);
}

void Graph::set_input(const float* images, Device images_on) {
  RT_CHECK(planned_, "forward before plan");
  copy_bytes(nodes_[0].y.data(), device_, images, images_on, nodes_[0].y.bytes());
}

void Graph::begin_forward(const RunContext& ctx) {
  RT_CHECK(planned_, "forward before plan");
  RT_CHECK(training_ || !ctx.training, "a graph planned for inference runs in eval mode only");
  for (size_t i = 1; i < nodes_.size(); ++i) nodes_[i].layer->begin_forward(ctx);
}

const Tensor& Graph::forward_work(const RunContext& ctx) {
  RT_CHECK(planned_, "forward before plan");
  RT_CHECK(training_ || !ctx.training, "a graph planned for inference runs in eval mode only");
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    n.layer->forward_work(n.x, n.y, ctx);
  }
  return nodes_.back().y;
}

void Graph::backward(const Tensor& dout, const RunContext& ctx) {
  RT_CHECK(outputs_.empty(), "this graph has ", output_count(), " outputs: backward needs a gradient for each");
  const Tensor* douts[1] = {&dout};
  backward(douts, ctx);
}

void Graph::backward(std::span<const Tensor* const> douts, const RunContext& ctx) {
  RT_CHECK(planned_, "backward before plan");
  RT_CHECK(training_, "backward on a graph planned for inference");
  RT_CHECK(douts.size() == output_count(), "backward got ", douts.size(), " output gradients for ", output_count(),
           " outputs");
  for (size_t k = 0; k < douts.size(); ++k)
    RT_CHECK(douts[k]->spec().same_as(output_spec(k)), "gradient of output ", k, " ", douts[k]->spec().describe(),
             " does not match the output ", output_spec(k).describe());
  LayerTimes times(layer_seconds_, layer_host_seconds_, device_, nodes_.size() - 1);
  for (size_t i = nodes_.size(); i-- > 1;) {
    Node& n = nodes_[i];
    if (!n.runs_backward) continue;
    if (n.zero_dy) n.dy.zero();
    n.layer->backward(n.x, n.y, n.output >= 0 ? *douts[static_cast<size_t>(n.output)] : n.dy, n.dx, ctx);
    for (int j : n.add_extra) accumulate(nodes_[j].dy, nodes_[j].dy_extra);
    times.layer_done(i - 1);
    if (grad_ready_ && !n.frozen)
      for (size_t p : n.params) grad_ready_(p);
  }
}

int64_t Graph::arena_floats_to_plan() const {
  int64_t floats = 0;
  for (size_t i = 1; i < nodes_.size(); ++i)
    for (const ParamSpec& p : nodes_[i].layer->param_specs()) floats += aligned_floats(p.shape);
  return floats;
}

int64_t Graph::grad_floats_to_plan() const {
  int64_t floats = 0;
  for (size_t i = 1; i < nodes_.size(); ++i)
    if (!nodes_[i].frozen)
      for (const ParamSpec& p : nodes_[i].layer->param_specs()) floats += aligned_floats(p.shape);
  return floats;
}

void Graph::freeze(const std::vector<std::string>& prefixes, bool statistics_training) {
  RT_CHECK(!planned_, "cannot freeze layers of a graph that is already planned");
  for (const std::string& prefix : prefixes) {
    bool found = false;
    for (size_t i = 1; i < nodes_.size(); ++i)
      if (name_under(nodes_[i].name, prefix)) found = true, nodes_[i].frozen = true;
    if (!found) {
      std::string names;
      for (const std::string& n : top_level_names()) names += (names.empty() ? "" : ", ") + n;
      RT_CHECK(false, "no layer is named '", prefix, "' or lies below it; the model's top-level names are ", names);
    }
  }
  frozen_statistics_training_ = statistics_training;
  for (size_t i = 1; i < nodes_.size(); ++i)
    if (nodes_[i].frozen) nodes_[i].layer->freeze(/*statistics_too=*/!statistics_training);
}

std::vector<std::string> Graph::top_level_names() const {
  std::vector<std::string> names;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    std::string top = nodes_[i].name.substr(0, nodes_[i].name.find('.'));
    if (std::find(names.begin(), names.end(), top) == names.end()) names.push_back(std::move(top));
  }
  return names;
}

std::vector<std::string> Graph::head_layers() const {
  std::vector<std::string> names;
  for (size_t k = 0; k < output_count(); ++k) {
    const Node& n = nodes_[output_node(k)];
    if (!n.layer->param_specs().empty()) names.push_back(n.name);
  }
  return names;
}

// Which layers run backward (Note [Frozen layers]): those with trainable parameters, and those
// below which one does, in a training plan.
void Graph::mark_backward() {
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    n.runs_backward = training_ && !n.frozen && !n.layer->param_specs().empty();
    for (int j : n.inputs) n.runs_backward = n.runs_backward || (training_ && nodes_[j].runs_backward);
  }
}

int64_t Graph::parameter_count() const {
  int64_t total = 0;
  for (const ParamRef& p : params_) total += p.value.numel();
  return total;
}

std::vector<LayerRow> Graph::layer_table() const {
  RT_CHECK(planned_, "layer_table before plan");
  std::vector<LayerRow> rows;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    LayerRow row{n.name,
                 std::string(n.layer->kind()),
                 n.y.shape(),
                 0,
                 n.layer->multiply_adds(),
                 std::string(n.layer->algorithm()),
                 n.layer->cudnn_graph_directions()};
    for (const ParamSpec& p : n.layer->param_specs()) row.params += numel(p.shape);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string Graph::summary() const {
  std::ostringstream os;
  const std::vector<LayerRow> rows = layer_table();
  int64_t params = 0, macs = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const LayerRow& r = rows[i];
    os << "  " << r.name << "  " << r.kind << "  " << nodes_[i + 1].y.spec().describe() << "  params " << r.params
       << "  macs " << r.macs << (r.algorithm.empty() ? "" : "  " + r.algorithm)
       << (nodes_[i + 1].frozen && r.params > 0 ? "  frozen" : "") << "\n";
    params += r.params;
    macs += r.macs;
  }
  os << "  total  params " << params << "  macs per image " << macs << "\n";
  return os.str();
}

}  // namespace rt
