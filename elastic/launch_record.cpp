#include "elastic/launch_record.h"

#include "formats/json.h"

namespace rt {

std::string launch_record(const LaunchEvent& event, int launch) {
  return to_json(Json{{"event", event.kind},
                      {"launch", launch},
                      {"previous_ranks", event.previous_ranks},
                      {"host", event.host},
                      {"why", event.why}});
}

}  // namespace rt
