// The rt::Error message a call throws, for tests that check what an error says.
#pragma once

#include <string>

#include "base/check.h"

namespace rt::testing {

// The message of the rt::Error `f` throws, or "" when it throws none.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace rt::testing
