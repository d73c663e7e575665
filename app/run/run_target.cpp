#include "app/run/run_target.h"

#include <cstdio>

namespace rt {

bool evaluates_after(const EvalConfig& eval, int64_t epoch, int64_t last) {
  if (epoch == last) return true;
  return epoch > 0 && epoch >= eval.offset_epochs && (epoch - eval.offset_epochs) % eval.every_epochs == 0;
}

std::string TargetOutcome::line() const {
  char text[200];
  if (reached)
    std::snprintf(text, sizeof text,
                  "ringtrain: reached the target top-1 %.2f%% (%.2f%%) after epoch %lld, %.0f s since the run "
                  "started\n",
                  100 * target, 100 * top1, static_cast<long long>(epoch), run_seconds);
  else
    std::snprintf(text, sizeof text,
                  "ringtrain: did not reach the target top-1 %.2f%%: %.2f%% after epoch %lld, the last "
                  "(train.epochs), %.0f s since the run started\n",
                  100 * target, 100 * top1, static_cast<long long>(epoch), run_seconds);
  return text;
}

Json TargetOutcome::record() const {
  return Json{{"kind", "target"}, {"target_top1", target}, {"reached", reached},
              {"epoch", epoch},   {"test_top1", top1},     {"run_seconds", run_seconds}};
}

}  // namespace rt
