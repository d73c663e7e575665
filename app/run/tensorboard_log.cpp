#include "app/run/tensorboard_log.h"

#include <array>
#include <string_view>

namespace rt {
namespace {

// The fields that place a record rather than measure something.
constexpr std::array<std::string_view, 4> kPlaces = {"kind", "step", "epoch", "images_seen"};

bool places(const std::string& field) {
  for (std::string_view p : kPlaces)
    if (field == p) return true;
  return false;
}

}  // namespace

std::vector<Scalar> scalars_of(const Json& record) {
  const std::string kind = record.value("kind", "");
  std::vector<Scalar> out;
  for (const auto& [field, value] : record.items())
    if (value.is_number() && !places(field))
      out.push_back({.tag = kind + "/" + field, .value = static_cast<float>(value.get<double>())});
  return out;
}

TensorBoardLog::TensorBoardLog(const std::string& dir, int64_t first_step) : file_(dir) {
  file_.write(session_start_event(event_wall_time(), first_step));
}

void TensorBoardLog::write(const Json& record) const {
  file_.write(scalars_event(event_wall_time(), record.value("step", int64_t{0}), scalars_of(record)));
}

}  // namespace rt
