#include "config/batch_shape.h"

#include "base/check.h"

namespace rt {

Config fit_global_batch(Config config, int64_t ranks) {
  TrainConfig& t = config.train;
  if (t.global_batch == 0) return config;
  if (t.global_batch % ranks != 0)
    throw ConfigError(str_cat("train.global_batch = ", t.global_batch, " does not divide among ", ranks,
                              " ranks: each rank takes an equal share of the step; run on a number of ranks that "
                              "divides it, or choose a global batch that ",
                              ranks, " divides"));
  const int64_t share = t.global_batch / ranks;
  int64_t k = (share + t.batch_per_rank - 1) / t.batch_per_rank;
  while (share % k != 0) ++k;  // ends at k = share at the latest: micro-batches of one image
  t.batch_per_rank = share / k;
  t.accumulate_steps = k;
  return config;
}

std::string describe_global_batch(const TrainConfig& t, int64_t ranks) {
  if (t.global_batch == 0) return "";
  return str_cat("train.global_batch ", t.global_batch, " = ", ranks, ranks == 1 ? " rank" : " ranks", " x ",
                 t.accumulate_steps, t.accumulate_steps == 1 ? " micro-batch" : " micro-batches", " of ",
                 t.batch_per_rank);
}

}  // namespace rt
