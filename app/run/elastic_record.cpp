#include "app/run/elastic_record.h"

#include <cstdlib>

#include "base/check.h"

namespace rt {

std::optional<Json> elastic_record(const TrainingPosition& at, int ranks, int64_t global_batch) {
  const char* event = std::getenv("RINGTRAIN_ELASTIC_EVENT");
  if (!event || !*event) return std::nullopt;
  const Json told = parse_json(event, "RINGTRAIN_ELASTIC_EVENT");
  RT_CHECK(told.is_object(), "RINGTRAIN_ELASTIC_EVENT: expected a JSON object, as ringtrain elastic sets it");
  Json record{{"kind", "elastic"},
              {"step", at.step},
              {"images_seen", at.images_seen},
              {"ranks", ranks},
              {"global_batch", global_batch}};
  for (const auto& [key, value] : told.items()) record[key] = value;
  return record;
}

}  // namespace rt
