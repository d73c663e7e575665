// `ringtrain info`: the build (oneDNN, CUDA), the model table and, with --config or --model, the
// planned model layer by layer.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "app/config_model.h"
#include "app/finetune.h"
#include "app/gradient_buckets.h"
#include "app/recipe_summary.h"
#include "base/check.h"
#include "cli/commands.h"
#include "dist/cuda/device_collective.h"
#include "dist/powersgd_buckets.h"
#include "models/registry.h"
#include "nn/cpu_bf16.h"
#include "nn/device.h"

namespace rt {

Config config_of(const CliArgs& args) {
  std::vector<std::string> overrides;
  if (!args.model.empty()) overrides.push_back("model.name=" + args.model);
  overrides.insert(overrides.end(), args.overrides.begin(), args.overrides.end());
  if (!args.config_path.empty()) return load_config(args.config_path, overrides);
  const ModelEntry& entry = find_model(args.model);
  return parse_config(str_cat("[model]\nname = \"", entry.name, "\"\nnum_classes = ", entry.default_classes, "\n"),
                      "(defaults for --model " + args.model + ")", overrides);
}

// dist.compression = "powersgd": each tensor it compresses and the floats a rank averages a step,
// with and without it, as the trainer's buckets hold them.
void print_compression(const Config& c, const Graph& g) {
  const DistConfig& d = c.dist;
  const GradientBuckets plan = plan_gradient_buckets(g, d);
  const std::vector<Shape>& shapes = plan.shapes;
  std::cout << "  PowerSGD (dist.compression) at rank " << d.powersgd_rank << " from step " << d.powersgd_start_step + 1
            << ", where n m > " << d.powersgd_min_ratio << " x k (n + m):\n";
  int64_t compressed = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const int64_t k = powersgd_rank(shapes[i], d.powersgd_rank, d.powersgd_min_ratio);
    if (k == 0) continue;
    ++compressed;
    const int64_t n = shapes[i][0], m = plan.params[i].count / n;
    std::cout << "    " << g.params()[i].name << " " << shape_str(shapes[i]) << ": " << n << " x " << m << " at rank "
              << k << ", " << k * (n + m) << " floats instead of " << n * m << "\n";
  }
  const PowerSgdFloats f = powersgd_floats(plan.params, shapes, plan.buckets, powersgd_options(d));
  const double bytes = d.wire == Wire::kFp32 ? 4 : 2;
  std::cout << "    " << compressed << " of " << shapes.size() << " tensors compressed: a rank averages "
            << static_cast<double>(f.compressed) * bytes / 1e6 << " MB a step instead of "
            << static_cast<double>(f.plain) * bytes / 1e6 << " MB (dist.wire = \"" << name_of(d.wire) << "\"), "
            << std::fixed << std::setprecision(1)
            << static_cast<double>(f.plain) / static_cast<double>(std::max<int64_t>(f.compressed, 1)) << "x fewer\n"
            << std::defaultfloat;
}

int info_command(const CliArgs& args) {
  const dnnl_version_t* v = dnnl_version();
  std::cout << "ringtrain 0.1.0\n"
            << "  CPU backend: oneDNN " << v->major << "." << v->minor << "." << v->patch
            << (v->cpu_runtime == DNNL_RUNTIME_OMP ? " (OpenMP)" : "") << "\n"
            << "  CUDA: " << cuda_report() << "\n";
  if (const std::string nccl = nccl_version(); !nccl.empty()) std::cout << "  NCCL: " << nccl << "\n";
  std::cout << "  models:\n";
  for (const ModelEntry& e : model_table()) std::cout << "    " << e.name << "  " << e.description << "\n";
  if (args.model.empty() && args.config_path.empty()) return 0;
  // With --config: its batch and, for synthetic data, its image size; with --model: one image at
  // the table's usual input.
  const Config c = config_of(args);
  Shape input = usual_input(c);
  if (args.input > 0) input[1] = input[2] = args.input;
  const int64_t batch = args.config_path.empty() ? 1 : c.train.batch_per_rank;
  // Planned as the CPU would train it: in bf16 where the config asks for it and the CPU runs it
  // (oneDNN's choices, Winograd's among them, differ by precision).
  const bool bf16 = c.train.device == Device::kCpu && c.train.precision == Precision::kBf16 && cpu_bf16().runs;
  const std::unique_ptr<Graph> g =
      plan_config_model_on_cpu(c, input, batch, /*training=*/true, bf16 ? Precision::kBf16 : Precision::kFp32);
  if (!args.config_path.empty())
    std::cout << "  optimizer: " << optimizer_summary(c.train) << "\n"
              << "  schedule: " << schedule_summary(c.schedule, c.train.epochs) << "\n"
              << "  batch norm: " << batch_norm_summary(c.train) << "\n";
  std::cout << "  " << c.model.name << " at batch " << batch << ", input " << shape_str(input) << ", "
            << c.model.num_classes << " classes, " << g->parameter_count() << " parameters" << (bf16 ? ", in bf16" : "")
            << ":\n"
            << g->summary();
  if (const std::string frozen = trainable_summary(*g, c.finetune); !frozen.empty())
    std::cout << "  " << frozen << "\n";
  if (!args.config_path.empty() && c.dist.compression == Compression::kPowerSgd) print_compression(c, *g);
  return 0;
}

}  // namespace rt
