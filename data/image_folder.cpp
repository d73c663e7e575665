#include "data/image_folder.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/check.h"
#include "base/stderr_line.h"

namespace fs = std::filesystem;

namespace rt {
namespace {

constexpr const char* kCacheHeader = "# ringtrain image index v1";

bool hidden(const fs::path& p) { return p.filename().string().starts_with("."); }

// Every regular, non-hidden file under dir, relative to root.
void list_files(const fs::path& root, const fs::path& dir, std::vector<std::string>& out) {
  for (const fs::directory_entry& e :
       fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink)) {
    if (hidden(e.path()) || !e.is_regular_file()) continue;
    out.push_back(fs::relative(e.path(), root).generic_string());
  }
}

std::vector<fs::path> class_folders(const fs::path& root) {
  std::vector<fs::path> dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(root))
    if (e.is_directory() && !hidden(e.path())) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end(), [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  return dirs;
}

int64_t mtime_ns(const fs::path& p) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(fs::last_write_time(p).time_since_epoch()).count();
}

// Reads a cache written for exactly these class folders, each with the time it had then; false
// when anything differs (a class added or removed, a file added to or removed from one).
bool read_cache(const fs::path& cache, const std::vector<fs::path>& dirs, ImageIndex& index) {
  std::ifstream in(cache);
  std::string line;
  if (!std::getline(in, line) || line != kCacheHeader) return false;
  size_t classes = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string first;
    std::getline(fields, first, '\t');
    if (first == "class") {
      std::string time, name;
      std::getline(fields, time, '\t');
      std::getline(fields, name);
      if (classes >= dirs.size() || dirs[classes].filename() != name || std::to_string(mtime_ns(dirs[classes])) != time)
        return false;
      index.classes.push_back(name);
      ++classes;
      continue;
    }
    std::string file;
    std::getline(fields, file);
    index.labels.push_back(static_cast<int32_t>(std::stol(first)));
    index.files.push_back(file);
  }
  return classes == dirs.size() && classes > 0 && !in.bad();
}

void write_cache(const fs::path& cache, const ImageIndex& index) {
  const fs::path tmp = cache.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kCacheHeader << "\n";
    for (const std::string& c : index.classes)
      out << "class\t" << mtime_ns(fs::path(index.root) / c) << "\t" << c << "\n";
    for (size_t i = 0; i < index.files.size(); ++i) out << index.labels[i] << "\t" << index.files[i] << "\n";
    out.flush();
    if (!out.good()) {
      stderr_line(str_cat("ringtrain: warning: cannot write the image index cache ", cache, "; using the scan"));
      std::error_code ec;
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, cache);
}

}  // namespace

ImageIndex scan_image_folder(const std::string& root) {
  RT_CHECK(fs::is_directory(root), "image folder '", root, "' does not exist or is not a folder");
  ImageIndex index;
  index.root = root;
  for (const fs::path& dir : class_folders(root)) {
    std::vector<std::string> files;
    list_files(root, dir, files);
    RT_CHECK(!files.empty(), "class folder '", dir.string(), "' has no files (every class needs at least one image)");
    std::sort(files.begin(), files.end());
    for (std::string& f : files) {
      index.files.push_back(std::move(f));
      index.labels.push_back(static_cast<int32_t>(index.classes.size()));
    }
    index.classes.push_back(dir.filename().string());
  }
  RT_CHECK(!index.classes.empty(), "image folder '", root, "' has no class folders (expected ROOT/<class>/<image>)");
  return index;
}

ImageIndex load_image_index(const std::string& root, std::string cache_path, bool rebuild) {
  RT_CHECK(fs::is_directory(root), "image folder '", root, "' does not exist or is not a folder");
  if (cache_path.empty()) cache_path = (fs::path(root) / ".ringtrain_index.tsv").string();
  if (!rebuild) {
    ImageIndex cached;
    cached.root = root;
    if (read_cache(cache_path, class_folders(root), cached)) return cached;
  }
  ImageIndex index = scan_image_folder(root);
  write_cache(cache_path, index);
  return index;
}

}  // namespace rt
