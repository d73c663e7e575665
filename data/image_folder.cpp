#include "data/image_folder.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/check.h"
#include "data/index_cache.h"

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

// Parses index text (image_index_text). With dirs, false unless it was written for exactly these
// class folders, each with the time it had then (a class added or removed, a file added to or
// removed from one); without, false only where it is malformed.
bool parse_index(std::istream& in, const std::vector<fs::path>* dirs, ImageIndex& index) {
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
      if (dirs && (classes >= dirs->size() || (*dirs)[classes].filename() != name ||
                   std::to_string(mtime_ns((*dirs)[classes].string())) != time))
        return false;
      index.classes.push_back(name);
      ++classes;
      continue;
    }
    std::string file;
    std::getline(fields, file);
    char* end = nullptr;
    const long label = std::strtol(first.c_str(), &end, 10);
    if (first.empty() || *end != '\0' || label < 0 || static_cast<size_t>(label) >= classes) return false;
    index.labels.push_back(static_cast<int32_t>(label));
    index.files.push_back(file);
  }
  return (!dirs || classes == dirs->size()) && classes > 0 && !in.bad();
}

}  // namespace

std::string image_index_text(const ImageIndex& index) {
  std::string text = str_cat(kCacheHeader, "\n");
  for (const std::string& c : index.classes)
    text += str_cat("class\t", mtime_ns((fs::path(index.root) / c).string()), "\t", c, "\n");
  for (size_t i = 0; i < index.files.size(); ++i) text += str_cat(index.labels[i], "\t", index.files[i], "\n");
  return text;
}

ImageIndex image_index_from_text(const std::string& root, const std::string& text) {
  ImageIndex index;
  index.root = root;
  std::istringstream in(text);
  RT_CHECK(parse_index(in, nullptr, index), "the image index of '", root, "' received from rank 0 is malformed");
  return index;
}

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
    const std::vector<fs::path> dirs = class_folders(root);
    std::ifstream in(cache_path);
    if (parse_index(in, &dirs, cached)) return cached;
  }
  ImageIndex index = scan_image_folder(root);
  write_index_cache(cache_path, image_index_text(index));
  return index;
}

}  // namespace rt
