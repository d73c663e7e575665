// The trainer's two loss-scaling policies against what they stand for: fp16's dynamic scaling is
// GradScaler's rule on the graph's real gradient arena (skip and halve on a non-finite gradient);
// every other precision scales nothing and applies every step.
#include "app/loss_scaling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/check.h"
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
    s->load(StFile{{{"loss_scale", "1024"}}, {}}, "fp16.safetensors");
    EXPECT_EQ(s->scale(), 1) << "a saved fp16 scale does not scale another precision";
    StFile kept;
    s->save(kept);
    EXPECT_EQ(kept.meta("loss_scale"), "1024") << "kept for a later fp16 run";
    StFile none;
    make_loss_scaling(p)->save(none);
    EXPECT_TRUE(none.metadata.empty()) << "nothing resumed, nothing saved";
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
  StFile saved;
  s->save(saved);
  EXPECT_EQ(saved.meta("loss_scale"), "32768");
  auto resumed = make_loss_scaling(Precision::kFp16);
  resumed->load(saved, "saved.safetensors");
  EXPECT_EQ(resumed->scale(), start / 2);
  resumed->load(StFile{}, "fp32.safetensors");  // a checkpoint of another precision saved none: the scale stays
  EXPECT_EQ(resumed->scale(), start / 2);
}

// The scale rides in the checkpoint's metadata exactly (2^24 + 1 needs more than float's digits),
// and a damaged one is refused naming the file and the key.
TEST(LossScaling, TheSavedScaleReadsBackExactlyAndABadOneIsRefused) {
  auto s = make_loss_scaling(Precision::kFp16);
  s->load(StFile{{{"loss_scale", "16777217"}}, {}}, "a.safetensors");
  StFile saved;
  s->save(saved);
  auto resumed = make_loss_scaling(Precision::kFp16);
  resumed->load(saved, "b.safetensors");
  EXPECT_EQ(resumed->scale(), 16777217.0);
  for (const char* bad : {"-2", "inf", "12x", "0"}) {
    try {
      resumed->load(StFile{{{"loss_scale", bad}}, {}}, "c.safetensors");
      ADD_FAILURE() << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("c.safetensors: metadata 'loss_scale'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace rt
