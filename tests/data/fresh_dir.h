// An empty temporary folder for one test, named after the test and the process (so parallel
// test processes never share one); the test removes it when done.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace rt::testing {

inline std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("ringtrain_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace rt::testing
