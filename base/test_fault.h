// Faults injected on purpose, for the tests of failure handling only: RINGTRAIN_TEST_FAULT=R:POINT
// (or R:POINT:STEP) makes rank R throw rt::Error "injected fault at POINT on rank R" when it
// reaches POINT (at training step STEP, counted from 0, where the point is in the step). Unset, it costs one
// cached check. The points are named where inject_fault is called.
#pragma once

#include <cstdint>
#include <string_view>

namespace rt {

void inject_fault(std::string_view point, int rank, int64_t step = -1);
// Whether RINGTRAIN_TEST_FAULT names this point, rank and step: for faults that are not an
// exception (the trainer flips a parameter's bit at "flip_parameter_bit").
bool fault_requested(std::string_view point, int rank, int64_t step = -1);
// Stops this process as a hung rank would (SIGSTOP): its peers must see the stall and end the job.
void freeze_this_process();

}  // namespace rt
