// Under `ringtrain elastic` (Note [Elastic runs] in elastic/supervisor.cpp), each launch's record in
// metrics.jsonl and TensorBoard: why the supervisor launched this run, with how many ranks it now
// trains and at which step it goes on, so that the curves show where the job shrank and grew.
#pragma once

#include <optional>

#include "app/training_position.h"
#include "formats/json.h"

namespace rt {

// {"kind": "elastic", "step", "images_seen", "ranks", "global_batch", then the supervisor's
// "event" (start, shrink, grow, relaunch), "launch", "previous_ranks", "host", "why"} from
// RINGTRAIN_ELASTIC_EVENT; nullopt where it is unset. TensorBoard draws the numbers
// ("elastic/ranks", ...). Throws rt::Error where the variable is not the supervisor's JSON object.
std::optional<Json> elastic_record(const TrainingPosition& at, int ranks, int64_t global_batch);

}  // namespace rt
