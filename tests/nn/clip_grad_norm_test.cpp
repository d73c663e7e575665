// clip_grad_norm against PyTorch's torch.nn.utils.clip_grad_norm_ on the same gradients: LeNet's
// gradient arena filled with random values (one parameter's much larger than the rest), clipped
// below its norm, at a limit above it, and all zero.
#include "nn/optim/clip_grad_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/rng.h"
#include "models/registry.h"
#include "tests/support/python_probe.h"

namespace rt {
namespace {

namespace fs = std::filesystem;

// Runs PyTorch's clip on the gradients in `graph`, leaving its norm and clipped gradients in dir.
void pytorch_clip(Graph& graph, double max_norm, const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream sizes(dir / "sizes.txt"), grads(dir / "grads.f32", std::ios::binary);
  for (const ParamRef& p : graph.params()) {
    sizes << p.grad.numel() << "\n";
    grads.write(reinterpret_cast<const char*>(p.grad.data()), static_cast<std::streamsize>(p.grad.bytes()));
  }
  sizes.close();
  grads.close();
  const std::string cmd = std::string(testing::kPython) + " " RT_SOURCE_DIR "/tests/nn/clip_grad_norm_oracle.py " +
                          dir.string() + " " + std::to_string(max_norm);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

std::vector<float> read_floats(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

TEST(ClipGradNorm, MatchesPytorchsClipGradNorm) {
  if (const std::string& why = testing::python_unavailable("torch"); !why.empty()) GTEST_SKIP() << why;
  std::unique_ptr<Graph> graph = build_model("lenet", ModelOptions{{1, 28, 28}, 10, 0.0, false});
  graph->plan(2, Device::kCpu, /*training=*/true, PlanContext{});
  Rng rng(7, 0);
  const fs::path dir = fs::temp_directory_path() / ("ringtrain_clip_" + std::to_string(::getpid()));
  for (const ParamRef& p : graph->params()) {
    const float scale = p.name == "classifier.0.weight" ? 0.05f : 0.01f;
    float* g = const_cast<float*>(p.grad.data());
    for (int64_t i = 0; i < p.grad.numel(); ++i) g[i] = scale * static_cast<float>(rng.uniform() * 2 - 1);
  }
  struct Case {
    const char* what;
    double max_norm;
    bool zero;
  };
  for (const Case c :
       {Case{"clipped", 0.5, false}, Case{"under the limit", 1000.0, false}, Case{"all zero", 1.0, true}}) {
    if (c.zero)
      for (const ParamRef& p : graph->params()) std::fill_n(const_cast<float*>(p.grad.data()), p.grad.numel(), 0.0f);
    const GradNorm ours = clip_grad_norm(*graph, c.max_norm);
    pytorch_clip(*graph, c.max_norm, dir);
    double total = 0;
    std::ifstream(dir / "total_norm.txt") >> total;
    const std::vector<float> theirs = read_floats(dir / "clipped.f32");
    EXPECT_NEAR(ours.total, total, 1e-6 * total + 1e-12) << c.what;
    if (!c.zero) {
      EXPECT_EQ(ours.coef < 1, c.max_norm < total) << c.what;
    }
    // The optimizer multiplies each gradient by coef in float32, as PyTorch's clip does in place.
    size_t k = 0, off = 0;
    double worst = 0;
    for (const ParamRef& p : graph->params())
      for (int64_t i = 0; i < p.grad.numel(); ++i, ++k) {
        const float mine = p.grad.data()[i] * static_cast<float>(ours.coef);
        worst = std::max(worst, std::abs(double{mine} - theirs[k]) / (std::abs(double{theirs[k]}) + 1e-12));
        off += mine != theirs[k];
      }
    ASSERT_EQ(k, theirs.size());
    EXPECT_LE(worst, 1e-6) << c.what << ": " << off << " of " << k << " clipped gradients differ";
    std::cout << c.what << ": norm " << ours.total << " (PyTorch " << total << "), factor " << ours.coef << ", " << off
              << " of " << k << " gradients not bit-identical, worst relative difference " << worst << "\n";
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rt
