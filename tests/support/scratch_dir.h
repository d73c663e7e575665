// A fresh folder under /tmp for one test, removed with its contents at scope exit, even where the
// test took its permissions away.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "base/check.h"

namespace rt::testing {

struct ScratchDir {
  ScratchDir() {
    char name[] = "/tmp/rt_test_XXXXXX";
    RT_ASSERT(::mkdtemp(name) != nullptr);
    path = name;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string operator/(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

}  // namespace rt::testing
