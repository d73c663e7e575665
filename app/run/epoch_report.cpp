#include "app/run/epoch_report.h"

#include <cstdio>

#include "base/check.h"

namespace rt {

std::string EpochReport::line() const {
  char text[256];
  std::snprintf(text, sizeof text, "epoch %lld/%lld: train loss %.4f top-1 %.2f%%, data wait %.1f%%",
                static_cast<long long>(epoch), static_cast<long long>(epochs), train_loss, 100 * train_top1,
                100 * data_wait);
  std::string out = text;
  if (skipped_files > 0) out += str_cat(", ", skipped_files, " unreadable file(s) skipped");
  if (fp16)
    out +=
        str_cat(", fp16 loss scale ", fp16->scale, ", ", fp16->skipped_steps, " step(s) skipped for overflow so far");
  if (test) {
    std::snprintf(text, sizeof text, " | test loss %.4f top-1 %.2f%% top-5 %.2f%%", test->loss, 100 * test->top1,
                  100 * test->top5);
    out += text;
  }
  std::snprintf(text, sizeof text, " (%.1f s)\n", seconds);
  return out + text;
}

Json EpochReport::record() const {
  Json r = {{"kind", "epoch"},
            {"epoch", epoch},
            {"step", step},
            {"train_loss", train_loss},
            {"train_top1", train_top1},
            {"epoch_seconds", train_seconds},
            {"data_wait", data_wait},
            {"skipped_files", skipped_files}};
  if (fp16) {
    r["loss_scale"] = fp16->scale;
    r["skipped_steps"] = fp16->skipped_steps;
  }
  if (test) {
    r["test_loss"] = test->loss;
    r["test_top1"] = test->top1;
    r["test_top5"] = test->top5;
  }
  return r;
}

}  // namespace rt
