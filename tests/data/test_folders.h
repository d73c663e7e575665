// Temporary folders for the data tests, which remove them when done: an empty one, and one with
// Fashion-MNIST exported as PNG class folders.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/python_probe.h"

namespace rt::testing {

inline std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("ringtrain_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

// datasets/fashion_mnist_to_folders.py into `out` (train/ and val/), `limit` images per split;
// true when it succeeded.
inline bool export_fashion_mnist(const std::filesystem::path& out, int limit) {
  const std::string cmd = std::string(kPython) + " " RT_SOURCE_DIR "/datasets/fashion_mnist_to_folders.py " +
                          out.string() + " --limit " + std::to_string(limit) + " > /dev/null";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace rt::testing
