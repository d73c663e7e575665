// ringtrain's side of powersgd_oracle_test.sh: the GradReducer with PowerSGD over ringtrain's
// ring, fed the gradients and first Q's tests/dist/powersgd_oracle.py made.
//
// usage: powersgd_job IN OUT RANK START_STEP [ALLREDUCE TRANSPORT]
//   IN: "r<rank>.s<step>.<name>" (each rank's gradient of tensor <name> at step <step>, from 0),
//       "q0.<name>" (its first Q, m x k, where compressed), tensors in bucket order.
//   OUT: this rank's "<OUT>.rank<r>.safetensors", "s<step>.<name>": what the reducer left in the
//        arena, every step.
// One bucket holds every tensor, laid out with 16-float alignment as the graph does; the
// compression's rank and start step are RANK and START_STEP, the minimum ratio PyTorch's 2.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "base/check.h"
#include "dist/grad_reducer.h"
#include "dist/powersgd_buckets.h"
#include "dist/world.h"
#include "formats/safetensors.h"
#include "tests/dist/test_stall.h"

namespace rt {
namespace {

int run(int argc, char** argv) {
  const World& w = World::init(&argc, &argv);
  RT_CHECK(argc == 5 || argc == 7, "usage: powersgd_job IN OUT RANK START_STEP [ALLREDUCE TRANSPORT]");
  const StFile in = read_safetensors(argv[1]);
  const std::string out = argv[2];
  const PowerSgdOptions options{std::atoll(argv[3]), 2.0, std::atoll(argv[4]), 0};
  // The tensors of step 0 on rank 0 name them, in bucket order.
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<ParamExtent> params;
  int64_t at = 0, steps = 0;
  for (const auto& [key, t] : in.tensors) {
    if (key.rfind("r0.s0.", 0) == 0) {
      names.push_back(key.substr(6));
      shapes.push_back(t.shape);
      int64_t count = 1;
      for (int64_t d : t.shape) count *= d;
      params.push_back({at, count});
      at += (count + 15) / 16 * 16;
    }
    if (key.rfind("r0.s", 0) == 0) steps = std::max<int64_t>(steps, std::atoll(key.c_str() + 4) + 1);
  }
  RT_CHECK(!names.empty(), argv[1], ": no tensor \"r0.s0.<name>\"");
  std::vector<float> arena(static_cast<size_t>(at), 0.0f);
  std::vector<Bucket> buckets = plan_buckets(params, int64_t{1} << 30, int64_t{1} << 30);
  auto compression = std::make_unique<PowerSgdBuckets>(params, shapes, buckets, options);
  for (PowerSgdBuckets::Tensor& t : compression->tensors()) {
    const std::string key = "q0." + names[t.param];
    const StTensor* q = in.find(key);
    RT_CHECK(q != nullptr, argv[1], ": no \"", key, "\" for a tensor ringtrain compresses");
    const std::vector<float> rows = as_f32(*q, key);  // PyTorch's m x k; ringtrain keeps Q's columns
    const int64_t m = t.matrix.m, k = t.matrix.k;
    RT_CHECK(static_cast<int64_t>(rows.size()) == m * k, key, ": ", rows.size(), " floats, expected m x k = ", m * k);
    for (int64_t j = 0; j < m; ++j)
      for (int64_t c = 0; c < k; ++c) t.q[static_cast<size_t>(c * m + j)] = rows[static_cast<size_t>(j * k + c)];
  }
  CollectiveSpec spec;
  if (argc == 7) {
    spec.allreduce = *enum_named<Allreduce>(argv[5]);
    spec.transport = *enum_named<TransportChoice>(argv[6]);
  }
  GradReducer reducer(arena.data(), params, buckets, make_collective(spec, w.comm(), test_stall()), /*overlap=*/true,
                      nullptr, std::nullopt, std::move(compression));
  StFile result;
  for (int64_t step = 0; step < steps; ++step) {
    reducer.begin_step(step);
    for (size_t p = 0; p < params.size(); ++p) {
      const std::string key = str_cat("r", w.rank(), ".s", step, ".", names[p]);
      const StTensor* g = in.find(key);
      RT_CHECK(g != nullptr, argv[1], ": no \"", key, "\"");
      const std::vector<float> v = as_f32(*g, key);
      std::copy(v.begin(), v.end(), arena.begin() + params[p].offset);
      reducer.on_grad_ready(p);
    }
    reducer.finish();
    for (size_t p = 0; p < params.size(); ++p)
      result.tensors.emplace_back(str_cat("s", step, ".", names[p]),
                                  make_f32_tensor(shapes[p], arena.data() + params[p].offset));
  }
  write_safetensors(str_cat(out, ".rank", w.rank(), ".safetensors"), result);
  if (w.rank() == 0)
    std::printf("powersgd_job: %lld steps of %zu tensors (%zu compressed) on %d ranks\n", static_cast<long long>(steps),
                names.size(), dynamic_cast<PowerSgdBuckets&>(reducer.hook()).tensors().size(), w.size());
  return 0;
}

}  // namespace
}  // namespace rt

int main(int argc, char** argv) {
  const int rc = rt::run(argc, argv);
  rt::World::get().finalize();
  return rc;
}
