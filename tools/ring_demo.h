// `ringtrain ring-demo --ranks P --elements N`: the ring-allreduce played out in one process on
// small integers, step by step, from the very schedule functions the trainer's ring runs
// (dist/ring_schedule.h), so what it prints is what the trainer does.
#pragma once

#include <cstdint>
#include <string>

namespace rt {

// The demo's text. Rank r starts with 10 r + i at element i, so every rank must end with the
// average 5 (P - 1) + i. rt::Error unless 2 <= ranks <= 8 and 1 <= elements <= 32.
std::string ring_demo(int ranks, int64_t elements);

}  // namespace rt
