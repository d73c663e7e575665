// Note [Group batch norm] on the GPU: its per-channel kernels and the layer around them, against
// the CPU's group batch norm and against cuDNN's own batch norm. The group is two twin ranks that
// hold the same images, so its average leaves every value as it is and one process can play it:
// the statistics are then one rank's, and the outputs and gradients are plain batch norm's. The
// averages over NCCL between real ranks are dist_group_batch_norm_gpu's (tests/dist).
#include <gtest/gtest.h>

#include <vector>

#include "nn/layers/group_batch_norm.h"
#include "tests/nn/gpu_parity.h"

namespace rt::testing {
namespace {

struct GroupRun {
  Tensor y, dx, dgamma, dbeta, running_mean, running_var;
};

// One training forward and backward through a GroupBatchNorm of twin ranks on x's device.
GroupRun run_twins(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& dy, const Tensor& rm,
                   const Tensor& rv, const BatchNormOptions& o, int* averages) {
  const Device d = x.device();
  const BatchNormGroup twins{2, [averages](float*, int64_t) { ++*averages; }};
  auto op = make_batch_norm(o, x.spec());
  GroupBatchNorm group(twins, o, x.spec());
  GroupRun r{Tensor(x.spec()),     Tensor(x.spec()), Tensor(gamma.spec()),
             Tensor(gamma.spec()), to_device(rm, d), to_device(rv, d)};
  group.forward_training(*op, x, gamma, beta, r.y, r.running_mean, r.running_var);
  group.backward_training(*op, x, gamma, beta, dy, r.dx, r.dgamma, r.dbeta);
  return r;
}

TEST_F(GpuParity, GroupBatchNormOfTwinRanksMatchesTheCpusAndPlainBatchNorm) {
  const int64_t C = 16;
  const Shape shape{4, C, 7, 7};
  const Both x = random_both(shape, 31, 3.0f), gamma = random_both({C}, 32), beta = random_both({C}, 33);
  const Both dy = random_both(shape, 34);
  Tensor rm = random_both({C}, 35, 0.1f).cpu, rv(plain_spec({C}));
  for (int64_t c = 0; c < C; ++c) rv.data()[c] = 1.0f + 0.01f * static_cast<float>(c);
  BatchNormOptions o;
  o.eps = 1e-5;
  o.momentum = 0.1;
  int cpu_averages = 0, gpu_averages = 0;
  const GroupRun cpu = run_twins(x.cpu, gamma.cpu, beta.cpu, dy.cpu, rm, rv, o, &cpu_averages);
  const GroupRun gpu = run_twins(x.gpu, gamma.gpu, beta.gpu, dy.gpu, rm, rv, o, &gpu_averages);
  EXPECT_EQ(gpu_averages, 3);  // the means, the variances, and backward's two sums
  EXPECT_EQ(cpu_averages, 3);
  EXPECT_PARITY(cpu.y, gpu.y, 1e-5);
  EXPECT_PARITY(cpu.dx, gpu.dx, 1e-4);
  EXPECT_PARITY(cpu.dgamma, gpu.dgamma, 1e-5);
  EXPECT_PARITY(cpu.dbeta, gpu.dbeta, 1e-5);
  EXPECT_PARITY(cpu.running_mean, gpu.running_mean, 1e-6);
  EXPECT_PARITY(cpu.running_var, gpu.running_var, 1e-6);

  // cuDNN's batch norm on the one rank's images computes the same outputs and gradients.
  auto plain = make_batch_norm(o, x.gpu.spec());
  Tensor y(x.gpu.spec()), dx(x.gpu.spec()), dgamma(gamma.gpu.spec()), dbeta(gamma.gpu.spec());
  Tensor prm = to_device(rm, kGpu), prv = to_device(rv, kGpu);
  plain->forward_training(x.gpu, gamma.gpu, beta.gpu, y, prm, prv);
  plain->backward_training(x.gpu, gamma.gpu, beta.gpu, dy.gpu, dx, dgamma, dbeta);
  EXPECT_PARITY(y, gpu.y, 1e-5);
  EXPECT_PARITY(dx, gpu.dx, 1e-4);
  EXPECT_PARITY(dgamma, gpu.dgamma, 1e-5);
  EXPECT_PARITY(dbeta, gpu.dbeta, 1e-5);
  EXPECT_PARITY(prm, gpu.running_mean, 1e-6);
  // The twins' running variance is unbiased over both: M / (M - 1) with M = 2 n, not n / (n - 1).
  const double n = 4.0 * 7 * 7, M = 2 * n;
  const std::vector<float> old_var = host_values(rv), plain_var = host_values(prv),
                           twin_var = host_values(gpu.running_var);
  for (int64_t c = 0; c < C; ++c) {
    const size_t k = static_cast<size_t>(c);
    const double batch_biased = (plain_var[k] - 0.9 * old_var[k]) / 0.1 * (n - 1) / n;
    EXPECT_NEAR(twin_var[k], 0.9 * old_var[k] + 0.1 * batch_biased * M / (M - 1), 1e-5 * plain_var[k]) << c;
  }
}

}  // namespace
}  // namespace rt::testing
