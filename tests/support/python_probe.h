// The Python oracles' interpreter, and whether it can import what a test needs.
#pragma once

#include <string>

namespace rt::testing {

inline constexpr const char* kPython = "/usr/bin/python3";

// Why `import <modules>` cannot run in kPython (say "torch, torchvision"), or "" when it can.
// The answer is remembered per module list for the life of the process.
const std::string& python_unavailable(const std::string& modules);

}  // namespace rt::testing
