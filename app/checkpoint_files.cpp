#include "app/checkpoint_files.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/check.h"

namespace rt {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "checkpoint-";
constexpr std::string_view kSuffix = ".safetensors";

// N from "checkpoint-<N>.safetensors", -1 for any other name.
int64_t images_in_name(const std::string& name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.rfind(kPrefix, 0) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
    return -1;
  const std::string digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

}  // namespace

std::string numbered_checkpoint_path(const std::string& dir, int64_t images_seen) {
  char name[64];
  std::snprintf(name, sizeof name, "checkpoint-%012lld.safetensors", static_cast<long long>(images_seen));
  return (fs::path(dir) / name).string();
}

std::vector<std::string> numbered_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const int64_t n = images_in_name(e.path().filename().string());
    if (n >= 0 && e.is_regular_file()) found.emplace_back(n, e.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& [n, path] : found) paths.push_back(std::move(path));
  return paths;
}

std::string newest_checkpoint(const std::string& dir) {
  const std::vector<std::string> numbered = numbered_checkpoints(dir);
  if (!numbered.empty()) return numbered.back();
  const fs::path plain = fs::path(dir) / kCheckpointFile;
  std::error_code ec;
  return fs::is_regular_file(plain, ec) ? plain.string() : "";
}

void publish_checkpoint(const std::string& dir, const std::string& saved, int64_t keep) {
  const fs::path link = fs::path(dir) / kCheckpointFile;
  const std::string staged = link.string() + ".link";
  ::unlink(staged.c_str());
  RT_CHECK(
      ::symlink(fs::path(saved).filename().c_str(), staged.c_str()) == 0 && ::rename(staged.c_str(), link.c_str()) == 0,
      "cannot point '", link.string(), "' at '", saved, "': ", std::strerror(errno));
  const std::vector<std::string> numbered = numbered_checkpoints(dir);
  const size_t kept = keep == 0 ? numbered.size() : std::min(numbered.size(), static_cast<size_t>(keep));
  // With each removed file go its ranks' own files, checkpoint-<N>.rank<R>-of-<P>.safetensors (Note
  // [Rank state] in app/rank_state.h), and those of saves a crash cut short before their checkpoint.
  std::vector<int64_t> kept_images;
  for (size_t i = numbered.size() - kept; i < numbered.size(); ++i)
    kept_images.push_back(images_in_name(fs::path(numbered[i]).filename().string()));
  for (size_t i = 0; i + kept < numbered.size(); ++i) fs::remove(numbered[i]);
  std::error_code listing;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, listing)) {
    const std::string name = e.path().filename().string();
    const size_t rank_at = name.find(".rank");
    if (rank_at == std::string::npos) continue;
    const int64_t n = images_in_name(name.substr(0, rank_at) + std::string(kSuffix));
    std::error_code removing;
    if (n >= 0 && std::find(kept_images.begin(), kept_images.end(), n) == kept_images.end())
      fs::remove(e.path(), removing);
  }
  // Temporary files of saves that a crash cut short (never of the save just made: it is renamed).
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0 &&
        images_in_name(name.substr(0, name.size() - 4)) >= 0)
      fs::remove(e.path(), ec);
  }
}

}  // namespace rt
