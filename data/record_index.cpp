#include "data/record_index.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/check.h"
#include "base/stderr_line.h"
#include "data/index_cache.h"
#include "data/record_format.h"

namespace fs = std::filesystem;

namespace rt {
namespace {

// What the cache's validity is judged by: every shard and classes.txt, with size and time.
struct Listed {
  std::string name;
  uint64_t size = 0;
  int64_t mtime = 0;
  bool operator==(const Listed&) const = default;
};

std::vector<Listed> list_shard_folder(const std::string& root, const RecordFormat& format) {
  RT_CHECK(fs::is_directory(root), "shard folder '", root, "' does not exist or is not a folder");
  std::vector<Listed> out;
  for (const fs::directory_entry& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.starts_with(".")) continue;
    if (format.holds(name) || name == kClassList)
      out.push_back({name, static_cast<uint64_t>(e.file_size()), mtime_ns(e.path().string())});
  }
  std::sort(out.begin(), out.end(), [](const Listed& a, const Listed& b) { return a.name < b.name; });
  return out;
}

std::vector<std::string> read_class_list(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> classes;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) classes.push_back(line);
  RT_CHECK(!in.bad() && !classes.empty(), "class list '", path, "' is unreadable or empty (one class name per line)");
  return classes;
}

ImageIndex scan(const std::string& root, const std::vector<Listed>& listed, const RecordFormat& format) {
  ImageIndex index;
  index.root = root;
  index.source = format.source;
  const bool class_list =
      std::any_of(listed.begin(), listed.end(), [](const Listed& l) { return l.name == kClassList; });
  if (class_list) index.classes = read_class_list(root + "/" + kClassList);
  for (const Listed& l : listed) {
    if (l.name == kClassList) continue;
    const auto c = static_cast<uint32_t>(index.containers.size());
    format.index(root, l.name, c, index, static_cast<int64_t>(index.classes.size()));
    index.containers.push_back(l.name);
  }
  RT_CHECK(!index.containers.empty(), "shard folder '", root, "' has no ", format.containers);
  RT_CHECK(!index.files.empty(), "shard folder '", root, "' has no usable samples in its ", index.containers.size(),
           " ", format.containers,
           index.left_out.empty() ? "" : str_cat(" (the first problem: ", index.left_out[0], ")"));
  if (!class_list && format.labels_in_index) {
    const int32_t top = *std::max_element(index.labels.begin(), index.labels.end());
    for (int32_t k = 0; k <= top; ++k) index.classes.push_back(std::to_string(k));
  }
  return index;
}

std::string listed_text(const std::vector<Listed>& listed) {
  std::string text;
  for (const Listed& l : listed) text += str_cat("file\t", l.size, "\t", l.mtime, "\t", l.name, "\n");
  return text;
}

// Parses shard index text; with `listed`, false unless it was made from exactly those files.
bool parse(std::istream& in, const std::vector<Listed>* listed, ImageIndex& index) {
  std::string line;
  if (!std::getline(in, line)) return false;
  const RecordFormat* format = record_format_of_header(line);
  if (!format) return false;
  index.source = format->source;
  const bool known_labels = format->labels_in_index;
  std::vector<Listed> files;
  std::vector<uint64_t> sizes;  // of the containers
  bool ended = false;
  while (std::getline(in, line)) {
    if (ended) return false;
    std::istringstream fields(line);
    std::string kind;
    std::getline(fields, kind, '\t');
    if (kind == "file") {
      Listed l;
      fields >> l.size >> l.mtime;
      fields.get();
      std::getline(fields, l.name);
      files.push_back(l);
      if (l.name != kClassList) {
        index.containers.push_back(l.name);
        sizes.push_back(l.size);
      }
    } else if (kind == "class") {
      std::string name;
      std::getline(fields, name);
      index.classes.push_back(name);
    } else if (kind == "end") {  // the sample count: a cache cut short is not believed
      size_t count = 0;
      fields >> count;
      if (!fields || count != index.files.size()) return false;
      ended = true;
    } else if (kind == "left_out") {
      std::string why;
      std::getline(fields, why);
      index.left_out.push_back(why);
    } else {
      RecordSpan span;
      std::string member;
      char* end = nullptr;
      const long label = std::strtol(kind.c_str(), &end, 10);
      fields >> span.container >> span.offset >> span.size;
      fields.get();
      std::getline(fields, member);
      const bool label_fits =
          known_labels ? label >= 0 && static_cast<size_t>(label) < index.classes.size() : label == -1;
      if (kind.empty() || *end != '\0' || !label_fits || !fields || span.container >= index.containers.size() ||
          span.size > sizes[span.container] || span.offset > sizes[span.container] - span.size)
        return false;
      index.labels.push_back(static_cast<int32_t>(label));
      index.files.push_back(member);
      index.spans.push_back(span);
    }
  }
  if (listed && files != *listed) return false;
  index.indexed_files = listed_text(files);
  return ended && !index.containers.empty() && !index.files.empty() && !in.bad();
}

}  // namespace

ImageIndex scan_record_files(const std::string& root, DataSource source) {
  const RecordFormat& format = record_format(source);
  const std::vector<Listed> listed = list_shard_folder(root, format);
  ImageIndex index = scan(root, listed, format);
  index.indexed_files = listed_text(listed);
  return index;
}

std::string record_index_text(const ImageIndex& index) {
  const RecordFormat& format = record_format(index.source);
  std::string text =
      str_cat(format.cache_header, "\n",
              index.indexed_files.empty() ? listed_text(list_shard_folder(index.root, format)) : index.indexed_files);
  for (const std::string& c : index.classes) text += str_cat("class\t", c, "\n");
  for (const std::string& why : index.left_out) {
    std::string line = why;
    std::replace(line.begin(), line.end(), '\n', ' ');
    text += str_cat("left_out\t", line, "\n");
  }
  for (size_t i = 0; i < index.files.size(); ++i) {
    const RecordSpan& s = index.spans[i];
    text += str_cat(index.labels[i], "\t", s.container, "\t", s.offset, "\t", s.size, "\t", index.files[i], "\n");
  }
  return text + str_cat("end\t", index.files.size(), "\n");
}

ImageIndex record_index_from_text(const std::string& root, const std::string& text) {
  ImageIndex index;
  index.root = root;
  std::istringstream in(text);
  RT_CHECK(parse(in, nullptr, index), "the shard index of '", root, "' received from rank 0 is malformed");
  return index;
}

ImageIndex load_record_index(const std::string& root, DataSource source, std::string cache_path, bool rebuild) {
  const RecordFormat& format = record_format(source);
  const std::vector<Listed> listed = list_shard_folder(root, format);
  if (cache_path.empty()) cache_path = root + "/" + format.cache_file;
  if (!rebuild) {
    ImageIndex cached;
    cached.root = root;
    std::ifstream in(cache_path);
    if (parse(in, &listed, cached) && cached.source == source) return cached;
  }
  ImageIndex index = scan(root, listed, format);
  index.indexed_files = listed_text(listed);
  // A file that changed while it was indexed (a copy still running) leaves no cache to trust.
  if (list_shard_folder(root, format) == listed)
    write_index_cache(cache_path, record_index_text(index));
  else
    stderr_line(str_cat("ringtrain: warning: the files of '", root, "' changed while they were indexed; ",
                        "the index is used but not cached"));
  return index;
}

void leave_out_labels_from(ImageIndex& index, int64_t num_classes) {
  if (!record_format(index.source).labels_in_index) {
    for (int64_t k = static_cast<int64_t>(index.classes.size()); k < num_classes; ++k)
      index.classes.push_back(std::to_string(k));
    return;
  }
  size_t kept = 0;
  for (size_t i = 0; i < index.files.size(); ++i) {
    if (index.labels[i] >= num_classes) {
      index.left_out.push_back(str_cat(index.path(i), ": class ", index.labels[i], ", but the model has ", num_classes,
                                       " classes (model.num_classes)"));
      continue;
    }
    if (kept != i) {
      index.files[kept] = std::move(index.files[i]);
      index.labels[kept] = index.labels[i];
      index.spans[kept] = index.spans[i];
    }
    ++kept;
  }
  index.files.resize(kept);
  index.labels.resize(kept);
  index.spans.resize(kept);
  // Numbered classes (no classes.txt) end at the largest label kept; a class list stays as it is.
  bool numbered = true;
  for (size_t k = 0; k < index.classes.size(); ++k) numbered = numbered && index.classes[k] == std::to_string(k);
  if (numbered && static_cast<int64_t>(index.classes.size()) > num_classes)
    index.classes.resize(static_cast<size_t>(num_classes));
}

}  // namespace rt
