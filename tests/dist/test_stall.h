// The stall policy of the MPI tests: report after 30 s, take the job down after 120 s, yield
// rather than spin when ranks outnumber cores.
#pragma once

#include <iostream>
#include <string>

#include "dist/stall_wait.h"
#include "dist/world.h"

namespace rt {

inline StallPolicy test_stall() {
  return {30, 120, [](const std::string& m) { std::cerr << "stall warning: " << m << "\n"; },
          [](const std::string& m) { World::get().abort(m); },
          World::get().oversubscribed() ? StallPolicy::Idle::kYield : StallPolicy::Idle::kSpin};
}

}  // namespace rt
