#include "nn/graph.h"

#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include "base/check.h"
#include "base/rng.h"
#include "nn/ops/add.h"

namespace rt {
namespace {

constexpr int64_t kAlignFloats = 16;  // 64 bytes: each parameter starts on a cache line

uint64_t name_hash(const std::string& s) {  // FNV-1a: stable across platforms and releases
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
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

void Graph::plan(int64_t batch, Device device) {
  RT_CHECK(!planned_, "graph planned twice");
  RT_CHECK(nodes_.size() > 1, "graph has no layers");
  RT_CHECK(batch >= 1, "batch must be >= 1, got ", batch);
  for (const ExtraOutput& o : outputs_)
    RT_CHECK(nodes_[o.node].consumers == 0 && o.node != static_cast<int>(nodes_.size()) - 1, "output '",
             nodes_[o.node].name, "' must be a node that no layer reads and not the main output");
  batch_ = batch;
  device_ = device;

  // Parameters in backward order (Note [Gradient arena]): last node's first.
  struct Pending {
    size_t node;
    std::vector<ParamSpec> specs;
  };
  std::vector<Pending> per_node(nodes_.size());
  int64_t floats = 0;
  for (size_t i = nodes_.size(); i-- > 1;) {
    per_node[i] = {i, nodes_[i].layer->param_specs()};
    for (const ParamSpec& p : per_node[i].specs) {
      ParamRef ref;
      ref.name = nodes_[i].name + "." + p.name;
      ref.role = p.role;
      ref.init = p.init;
      ref.offset = floats;
      params_.push_back(ref);
      floats += (numel(p.shape) + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
    }
  }
  arena_floats_ = floats;
  param_arena_ = Tensor(plain_spec({std::max<int64_t>(floats, 1)}, device));
  grad_arena_ = Tensor(plain_spec({std::max<int64_t>(floats, 1)}, device));

  // Bind views, then plan each node in topological order.
  size_t next_param = 0;
  std::vector<std::vector<Tensor>> values(nodes_.size()), grads(nodes_.size());
  for (size_t i = nodes_.size(); i-- > 1;) {
    for (const ParamSpec& p : per_node[i].specs) {
      ParamRef& ref = params_[next_param++];
      ref.value = Tensor(plain_spec(p.shape, device), param_arena_.data() + ref.offset, nullptr);
      ref.grad = Tensor(plain_spec(p.shape, device), grad_arena_.data() + ref.offset, nullptr);
      values[i].push_back(ref.value);
      grads[i].push_back(ref.grad);
    }
  }
  Shape in_shape = nodes_[0].y.shape();
  in_shape[0] = batch;
  nodes_[0].y = Tensor(plain_spec(in_shape, device));
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    std::vector<Tensor> bufs;
    for (const BufferSpec& b : n.layer->buffer_specs()) {
      bufs.emplace_back(plain_spec(b.shape, device));
      buffers_.push_back({n.name + "." + b.name, bufs.back()});
    }
    for (auto& [name, ptr] : n.layer->counters()) counters_.push_back({n.name + "." + name, ptr});
    n.layer->bind(values[i], grads[i], bufs);
    std::vector<TensorSpec> x;
    std::vector<bool> need_dx;
    for (int j : n.inputs) {
      x.push_back(nodes_[j].y.spec());
      need_dx.push_back(j != input());
    }
    try {
      n.y = Tensor(n.layer->plan(x, need_dx));
    } catch (const Error& e) {
      throw Error(str_cat("layer '", n.name, "' (", n.layer->kind(), "): ", e.what()));
    }
  }
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    n.dy = Tensor(n.y.spec());
    if (n.consumers > 1) n.dy_extra = Tensor(n.y.spec());
  }
  planned_ = true;
}

void Graph::init_parameters(uint64_t seed) {
  RT_CHECK(planned_, "init_parameters before plan");
  for (ParamRef& p : params_) {
    Rng rng(seed, name_hash(p.name));
    float* w = p.value.data();
    for (int64_t i = 0; i < p.value.numel(); ++i) {
      switch (p.init.kind) {
        case Init::Kind::kConstant: w[i] = static_cast<float>(p.init.a); break;
        case Init::Kind::kUniform: w[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * p.init.a); break;
        case Init::Kind::kNormal: w[i] = static_cast<float>(rng.normal() * p.init.a); break;
      }
    }
  }
  size_t b = 0;
  for (size_t i = 1; i < nodes_.size(); ++i)
    for (const BufferSpec& spec : nodes_[i].layer->buffer_specs()) {
      Tensor& t = buffers_[b++].value;
      std::fill(t.data(), t.data() + t.numel(), spec.fill);
    }
  for (CounterRef& c : counters_) *c.value = 0;
}

const Tensor& Graph::forward(const float* images, const RunContext& ctx) {
  RT_CHECK(planned_, "forward before plan");
  std::memcpy(nodes_[0].y.data(), images, nodes_[0].y.bytes());
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    std::vector<const Tensor*> x;
    for (int j : n.inputs) x.push_back(&nodes_[j].y);
    n.layer->forward(x, n.y, ctx);
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
  RT_CHECK(douts.size() == output_count(), "backward got ", douts.size(), " output gradients for ", output_count(),
           " outputs");
  // Which gradient, if any, an output node starts from (outputs have no consumers).
  std::vector<const Tensor*> given(nodes_.size(), nullptr);
  for (size_t k = 0; k < douts.size(); ++k) {
    RT_CHECK(douts[k]->spec().same_as(output_spec(k)), "gradient of output ", k, " ", douts[k]->spec().describe(),
             " does not match the output ", output_spec(k).describe());
    given[output_node(k)] = douts[k];
  }
  for (Node& n : nodes_) n.dy_written = false;
  size_t param_index = 0;
  for (size_t i = nodes_.size(); i-- > 1;) {
    Node& n = nodes_[i];
    const Tensor* dy = &n.dy;
    if (given[i]) {
      dy = given[i];
    } else if (!n.dy_written) {
      // An output nobody consumed: its parameters get zero gradients.
      n.dy.zero();
    }
    std::vector<const Tensor*> x;
    std::vector<Tensor*> dx;
    std::vector<int> accumulate_into;
    for (int j : n.inputs) {
      Node& in = nodes_[j];
      x.push_back(&in.y);
      if (j == input()) {
        dx.push_back(nullptr);
      } else if (!in.dy_written) {
        dx.push_back(&in.dy);  // first consumer (in backward order) writes
        in.dy_written = true;
      } else {
        dx.push_back(&in.dy_extra);  // later consumers add theirs in
        accumulate_into.push_back(j);
      }
    }
    n.layer->backward(x, n.y, *dy, dx, ctx);
    for (int j : accumulate_into) accumulate(nodes_[j].dy, nodes_[j].dy_extra);
    const size_t count = n.layer->param_specs().size();
    for (size_t k = 0; k < count; ++k, ++param_index)
      if (grad_ready_) grad_ready_(param_index);
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
    LayerRow row{n.name, std::string(n.layer->kind()), n.y.shape(), 0, n.layer->multiply_adds()};
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
       << "  macs " << r.macs << "\n";
    params += r.params;
    macs += r.macs;
  }
  os << "  total  params " << params << "  macs per image " << macs << "\n";
  return os.str();
}

}  // namespace rt
