// schedule.kind = "poly" after warmup against torch's own schedulers on the same settings:
// LinearLR then PolynomialLR, every step (tests/nn/lr_schedule_oracle.py).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "nn/optim/lr_schedule.h"
#include "tests/support/python_probe.h"

namespace rt {
namespace {

std::vector<double> torch_rates(double base, int64_t warmup, int64_t total, double power) {
  const std::string cmd = std::string(testing::kPython) + " " RT_SOURCE_DIR "/tests/nn/lr_schedule_oracle.py " +
                          std::to_string(base) + " " + std::to_string(warmup) + " " + std::to_string(total) + " " +
                          std::to_string(power);
  std::unique_ptr<FILE, int (*)(FILE*)> out(popen(cmd.c_str(), "r"), pclose);
  std::vector<double> rates;
  double lr = 0;
  while (out && std::fscanf(out.get(), "%lf", &lr) == 1) rates.push_back(lr);
  return rates;
}

TEST(LrScheduleAgainstTorch, PolyAfterWarmupMatchesLinearLrThenPolynomialLr) {
  if (const std::string& why = testing::python_unavailable("torch"); !why.empty()) GTEST_SKIP() << why;
  for (const double power : {2.0, 1.0, 0.5}) {
    LrSchedule s;
    s.kind = LrSchedule::Kind::kPoly;
    s.base = 10.5;  // about MLPerf's LARS rate at 32k images
    s.warmup_steps = 16;
    s.total_steps = 120;
    s.power = power;
    const std::vector<double> theirs = torch_rates(s.base, s.warmup_steps, s.total_steps, power);
    ASSERT_EQ(theirs.size(), static_cast<size_t>(s.total_steps)) << "torch printed " << theirs.size() << " rates";
    for (int64_t step = 0; step < s.total_steps; ++step)
      EXPECT_NEAR(s.at(step), theirs[static_cast<size_t>(step)], 1e-12 * s.base)
          << "step " << step << ", power " << power;
  }
}

}  // namespace
}  // namespace rt
