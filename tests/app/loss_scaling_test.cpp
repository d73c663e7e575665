// The trainer's two loss-scaling policies against what they stand for: fp16's dynamic scaling is
// GradScaler's rule on the graph's real gradient arena (skip and halve on a non-finite gradient);
// every other precision scales nothing and applies every step.
#include "app/loss_scaling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "models/registry.h"

namespace rt {
namespace {

std::unique_ptr<Graph> planned_lenet() {
  auto g = build_model("lenet", ModelOptions{});
  g->plan(4, Device::kCpu);
  return g;
}

TEST(LossScaling, OtherPrecisionsScaleNothingAndApplyEveryStep) {
  auto g = planned_lenet();
  g->grad_arena()[7] = std::numeric_limits<float>::infinity();  // not its business: no scale to back off
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16}) {
    SCOPED_TRACE(name_of(p));
    auto s = make_loss_scaling(p);
    EXPECT_EQ(s->scale(), 1);
    EXPECT_TRUE(s->gradients_apply(*g, 0));
    EXPECT_FALSE(s->state().has_value());
    s->resume({.loss_scale = 1024});
    EXPECT_EQ(s->scale(), 1) << "a saved fp16 scale does not scale another precision";
    TrainingPosition kept{.loss_scale = 1024};
    s->save(kept);
    EXPECT_EQ(kept.loss_scale, 1024) << "kept for a later fp16 run";
  }
}

TEST(LossScaling, Fp16SkipsAStepWithANonFiniteGradientAndHalvesItsScale) {
  auto g = planned_lenet();
  auto s = make_loss_scaling(Precision::kFp16);
  const double start = s->scale();
  EXPECT_EQ(start, 65536) << "GradScaler's initial scale";
  EXPECT_TRUE(s->gradients_apply(*g, 0)) << "an all-zero arena is finite";
  g->grad_arena()[g->arena_floats() - 1] = std::nanf("");
  EXPECT_FALSE(s->gradients_apply(*g, 1));
  ASSERT_TRUE(s->state().has_value());
  EXPECT_EQ(s->state()->scale, start / 2);
  EXPECT_EQ(s->state()->skipped_steps, 1);
  TrainingPosition saved;
  s->save(saved);
  EXPECT_EQ(saved.loss_scale, start / 2);
  auto resumed = make_loss_scaling(Precision::kFp16);
  resumed->resume(saved);
  EXPECT_EQ(resumed->scale(), start / 2);
  resumed->resume({});  // a checkpoint of another precision saved none: the scale stays
  EXPECT_EQ(resumed->scale(), start / 2);
}

}  // namespace
}  // namespace rt
