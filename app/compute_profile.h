// A model's compute profile for the step simulator (dist/step_simulator.h): when backward finishes
// each gradient, from the layers' multiply-adds and one step's time, or from a measured profile
// (`ringtrain bench --profile`). `ringtrain simulate` and the online tuner (app/run/bucket_tuner.h)
// both price steps from it.
#pragma once

#include <string>

#include "dist/step_simulator.h"
#include "formats/step_profile.h"
#include "nn/graph.h"

namespace rt {

// The profile of a planned graph whose one-rank training step takes step_s: a third of it forward,
// two thirds backward (training costs about three times the forward multiply-adds), backward's
// time spread over the layers, last to first, in proportion to their multiply-adds.
ComputeProfile profile_from_multiply_adds(const Graph& graph, double step_s);
// The profile `ringtrain bench --profile` measured (formats/step_profile.h) for this graph: rt::Error
// when its model or layers are not the graph's.
ComputeProfile profile_from_measurement(const Graph& graph, const StepProfile& measured, const std::string& source);

}  // namespace rt
