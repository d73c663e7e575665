#include "app/recipe_summary.h"

#include "app/config_model.h"
#include "base/check.h"

namespace rt {

std::string optimizer_summary(const TrainConfig& t) {
  std::string s = describe_optimizer(t.optimizer, optimizer_options(t));
  s += t.lr > 0 ? str_cat(", base rate ", t.lr, " for the global batch")
                : str_cat(", ", t.lr_per_256, " per 256 images");
  if (t.label_smoothing > 0) s += str_cat(", label smoothing ", t.label_smoothing);
  if (t.clip_grad_norm > 0) s += str_cat(", gradients clipped to norm ", t.clip_grad_norm);
  return s;
}

std::string batch_norm_summary(const TrainConfig& t) {
  if (t.bn_group <= 1) return str_cat("statistics over each rank's ", t.batch_per_rank, " images");
  return str_cat("statistics pooled over groups of ", t.bn_group, " ranks (train.bn_group), ",
                 t.batch_per_rank * t.bn_group, " images each");
}

std::string schedule_summary(const ScheduleConfig& s, int64_t epochs) {
  std::string decay;
  switch (s.kind) {
    case ScheduleKind::kConstant:
      decay = "constant";
      break;
    case ScheduleKind::kStep: {
      decay = str_cat("x ", s.factor, " at epoch");
      if (s.milestones.size() > 1) decay += "s";
      for (size_t i = 0; i < s.milestones.size(); ++i) decay += str_cat(i == 0 ? " " : ", ", s.milestones[i]);
      break;
    }
    case ScheduleKind::kCosine:
      decay = "cosine decay to ";
      break;
    case ScheduleKind::kPoly:
      decay = str_cat("poly decay (power ", s.power, ") to ");
      break;
  }
  if (s.kind == ScheduleKind::kCosine || s.kind == ScheduleKind::kPoly) {
    decay += s.end_lr > 0 ? str_cat("the rate ", s.end_lr) : str_cat(s.final_fraction, " x the rate");
    if (s.decay_steps > 0)
      decay += str_cat(" over ", s.decay_steps, " steps after warmup, then held");
    else if (s.decay_epochs > 0)
      decay += str_cat(" at epoch ", s.warmup_epochs + s.decay_epochs, ", then held");
    else
      decay += str_cat(" at epoch ", epochs);
  }
  if (s.warmup_epochs <= 0) return decay;
  return str_cat("linear warmup over ", s.warmup_epochs, " epoch", s.warmup_epochs == 1 ? "" : "s", ", then ", decay);
}

}  // namespace rt
