#include "cli/forward.h"

#include <omp.h>

#include <cstring>

#include "app/checkpoint.h"
#include "app/config_model.h"
#include "app/cpu_precision.h"
#include "base/check.h"
#include "base/cpu_budget.h"
#include "formats/safetensors.h"
#include "nn/graph_loss.h"

namespace rt {
namespace {

std::vector<int32_t> read_targets(const StTensor& t, int64_t batch, int64_t classes, const std::string& source) {
  RT_CHECK(t.shape == Shape{batch}, source, ": 'target' has shape ", shape_str(t.shape), ", expected (", batch,
           ") for a batch of ", batch);
  RT_CHECK(t.dtype == DType::kI64 || t.dtype == DType::kI32, source, ": 'target' is ", dtype_name(t.dtype),
           ", expected I64 or I32 class indices");
  std::vector<int32_t> targets(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) {
    int64_t v = 0;
    if (t.dtype == DType::kI64) {
      std::memcpy(&v, t.bytes.data() + i * 8, 8);
    } else {
      int32_t v32 = 0;
      std::memcpy(&v32, t.bytes.data() + i * 4, 4);
      v = v32;
    }
    RT_CHECK(v >= 0 && v < classes, source, ": target[", i, "] = ", v, " is outside [0, ", classes, ")");
    targets[static_cast<size_t>(i)] = static_cast<int32_t>(v);
  }
  return targets;
}

// A scalar (shape ()) of one 8-byte value: F64 or I64.
template <typename T>
StTensor scalar(DType dtype, T v) {
  static_assert(sizeof(T) == 8);
  StTensor t;
  t.dtype = dtype;
  t.bytes.resize(8);
  std::memcpy(t.bytes.data(), &v, 8);
  return t;
}

}  // namespace

std::string run_forward(const ForwardRequest& r) {
  RT_CHECK(r.training || !r.backward, "forward --backward needs training mode (leave out --eval)");
  const Config& c = r.config;
  omp_set_num_threads(c.train.threads > 0 ? static_cast<int>(c.train.threads) : this_process_cpu_budget().cpus());

  const StFile batch = read_safetensors(r.batch_path);
  const StTensor* input = batch.find("input");
  RT_CHECK(input, r.batch_path, ": no tensor 'input' (expected the batch as (N, C, H, W))");
  RT_CHECK(input->shape.size() == 4, r.batch_path, ": 'input' has shape ", shape_str(input->shape),
           ", expected (N, C, H, W)");
  const int64_t n = input->shape[0];
  RT_CHECK(n >= 1, r.batch_path, ": 'input' holds no images");
  const std::vector<float> images = as_f32(*input, r.batch_path + ": 'input'");
  const StTensor* target = batch.find("target");
  RT_CHECK(target || !r.backward, r.batch_path, ": --backward needs a tensor 'target' (N) of class indices");
  const std::vector<int32_t> targets =
      target ? read_targets(*target, n, c.model.num_classes, r.batch_path) : std::vector<int32_t>();

  const Shape sample = {input->shape[1], input->shape[2], input->shape[3]};
  // train.precision = "bf16" runs the pass as a bf16 training step computes it.
  check_cpu_precision(c.train);
  const bool cpu_bf16 = c.train.device == Device::kCpu && c.train.precision == Precision::kBf16;
  std::unique_ptr<Graph> graph =
      plan_config_model_on_cpu(c, sample, n, r.training, cpu_bf16 ? Precision::kBf16 : Precision::kFp32);
  for (const CounterRef& counter : graph->counters()) *counter.value = 0;  // optional in the file
  load_model_state(*graph, read_safetensors(r.weights_path), r.weights_path);

  const RunContext ctx{r.training, static_cast<uint64_t>(c.train.seed), 0};
  graph->forward(images.data(), ctx);
  StFile out;
  out.metadata = {{"model", c.model.name}, {"mode", r.training ? "training" : "eval"}};
  out.tensors.push_back({"logits", f32_tensor_of(graph->output(0))});
  if (graph->output_count() > 1) out.tensors.push_back({"aux_logits", f32_tensor_of(graph->output(1))});
  std::string summary = str_cat("forward: ", c.model.name, ", batch ", n, " of ", shape_str(sample), ", ",
                                r.training ? "training" : "eval", " mode");
  if (!targets.empty()) {
    OutputGradients dy(*graph);
    const LossResult loss = graph_loss(*graph, targets.data(), c.train.label_smoothing, r.backward ? &dy : nullptr);
    out.tensors.push_back({"loss", scalar(DType::kF64, loss.loss)});
    summary += str_cat(": loss ", loss.loss, ", top-1 ", loss.correct1, "/", n);
    if (r.backward) {
      graph->backward(dy.views(), ctx);
      for (const ParamRef& p : graph->trainable_params())
        out.tensors.push_back({"grad." + p.name, f32_tensor_of(p.grad)});
    }
  }
  for (const BufferRef& b : graph->buffers()) out.tensors.push_back({b.name, f32_tensor_of(b.value)});
  for (const CounterRef& counter : graph->counters())
    out.tensors.push_back({counter.name, scalar(DType::kI64, *counter.value)});
  write_safetensors(r.out_path, out);
  return str_cat(summary, "; wrote ", out.tensors.size(), " tensors to ", r.out_path);
}

}  // namespace rt
