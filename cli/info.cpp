// `ringtrain info`: the build (oneDNN, CUDA), the model table and, with --config or --model, the
// planned model layer by layer.
#include <oneapi/dnnl/dnnl.hpp>

#include <iostream>
#include <string>
#include <vector>

#include "app/config_model.h"
#include "app/recipe_summary.h"
#include "base/check.h"
#include "cli/commands.h"
#include "dist/cuda/device_collective.h"
#include "models/registry.h"
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
  const std::unique_ptr<Graph> g = plan_config_model_on_cpu(c, input, batch, /*training=*/true);
  if (!args.config_path.empty())
    std::cout << "  optimizer: " << optimizer_summary(c.train) << "\n"
              << "  schedule: " << schedule_summary(c.schedule, c.train.epochs) << "\n"
              << "  batch norm: " << batch_norm_summary(c.train) << "\n";
  std::cout << "  " << c.model.name << " at batch " << batch << ", input " << shape_str(input) << ", "
            << c.model.num_classes << " classes, " << g->parameter_count() << " parameters:\n"
            << g->summary();
  return 0;
}

}  // namespace rt
