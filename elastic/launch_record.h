// Why `ringtrain elastic` launches the job this time, as the job receives it in
// RINGTRAIN_ELASTIC_EVENT (a JSON object), for its launch record in metrics.jsonl
// (app/run/elastic_record.h).
#pragma once

#include <string>

namespace rt {

struct LaunchEvent {
  std::string kind;        // start, shrink (a host failed), grow (hosts came back), relaunch
  std::string host;        // the host(s) that failed, or ""
  int previous_ranks = 0;  // the launch before's ranks (0 at the first)
  std::string why;         // the reason, in words ("" at the first)
};

std::string launch_record(const LaunchEvent& event, int launch);

}  // namespace rt
