#include "cli/predict.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "app/checkpoint.h"
#include "app/config_model.h"
#include "app/image_options.h"
#include "base/check.h"
#include "base/cpu_budget.h"
#include "data/image_folder.h"
#include "data/sample_index.h"
#include "formats/safetensors.h"
#include "models/registry.h"

namespace rt {
namespace {

// The image folder's or shards' class names, from the evaluation tree's index (cached), else its training tree's.
std::vector<std::string> class_names(const DataConfig& d, int64_t classes) {
  std::vector<std::string> names;
  if (decodes_images(d.source)) {
    for (const std::string& folder : {d.val_folder, d.train_folder}) {
      const std::string root = (std::filesystem::path(d.dir) / folder).string();
      if (std::filesystem::is_directory(root)) {
        names = load_index(d.source, root).classes;
        break;
      }
    }
  }
  for (int64_t i = static_cast<int64_t>(names.size()); i < classes; ++i) names.push_back(str_cat("class ", i));
  return names;
}

}  // namespace

std::string run_predict(const Config& c, const std::string& weights_path, const std::vector<std::string>& images) {
  RT_CHECK(!images.empty(), "ringtrain predict needs at least one --image PATH");
  omp_set_num_threads(c.train.threads > 0 ? static_cast<int>(c.train.threads) : this_process_cpu_budget().cpus());

  // An IDX-trained model reads what its data had: the model's usual channels and size.
  DataConfig d = c.data;
  if (!decodes_images(d.source)) {
    const Shape usual = find_model(c.model.name).default_input;
    d.channels = usual[0];
    if (d.image_size == 0) d.image_size = usual[1];
  }
  const ImageSampleOptions o = image_sample_options(d, c.model.name);
  const int64_t n = static_cast<int64_t>(images.size());
  std::vector<float> batch(static_cast<size_t>(n * o.floats()));
  for (int64_t i = 0; i < n; ++i) {
    const RgbImage decoded = read_image(images[static_cast<size_t>(i)], o.max_pixels);
    normalize_sample(transform_image(decoded, o, /*training=*/false, 0, 0, i), o, batch.data() + i * o.floats());
  }

  std::unique_ptr<Graph> graph = plan_config_model_on_cpu(c, {o.channels, o.size, o.size}, n, /*training=*/false);
  for (const CounterRef& counter : graph->counters()) *counter.value = 0;  // optional in the file
  load_model_state(*graph, read_safetensors(weights_path), weights_path);
  const Tensor& logits = graph->forward(batch.data(), RunContext{false, 0, 0});

  const int64_t classes = logits.dim(1);
  const std::vector<std::string> names = class_names(d, classes);
  std::string report;
  for (int64_t i = 0; i < n; ++i) {
    const float* z = logits.data() + i * classes;
    // Softmax in double, shifted by the largest logit.
    const double top = *std::max_element(z, z + classes);
    std::vector<double> p(static_cast<size_t>(classes));
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += p[static_cast<size_t>(k)] = std::exp(static_cast<double>(z[k]) - top);
    std::vector<int64_t> order(static_cast<size_t>(classes));
    std::iota(order.begin(), order.end(), 0);
    const size_t shown = std::min<size_t>(5, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(),
                      [&](int64_t a, int64_t b) { return p[static_cast<size_t>(a)] > p[static_cast<size_t>(b)]; });
    report += images[static_cast<size_t>(i)] + "\n";
    for (size_t r = 0; r < shown; ++r) {
      char line[64];
      std::snprintf(line, sizeof line, "  %zu. %6.2f%%  ", r + 1, 100 * p[static_cast<size_t>(order[r])] / sum);
      report += line + names[static_cast<size_t>(order[r])] + "\n";
    }
  }
  return report;
}

}  // namespace rt
