#include "data/shard_index.h"

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
#include "data/read_only_file.h"
#include "data/tar_members.h"
#include "data/tf_example.h"

namespace fs = std::filesystem;

namespace rt {
namespace {

const char* header_of(RecordFormat f) {
  return f == RecordFormat::kTar ? "# ringtrain shard index v1" : "# ringtrain tfrecord index v1";
}
constexpr const char* kClassList = "classes.txt";

// The extensions a sample's image member may have (decoding goes by content, not by name).
bool image_extension(std::string ext) {
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* e : {"jpg", "jpeg", "png", "bmp", "gif", "tga", "ppm", "pgm", "pnm", "webp", "img"})
    if (ext == e) return true;
  return false;
}

// WebDataset's split of a member's name: key = the path up to the first dot of its file name.
std::pair<std::string, std::string> key_and_extension(const std::string& name) {
  const size_t slash = name.rfind('/');
  const size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
  if (dot == std::string::npos) return {name, ""};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

// What the cache's validity is judged by: every shard and classes.txt, with size and time.
struct Listed {
  std::string name;
  uint64_t size = 0;
  int64_t mtime = 0;
  bool operator==(const Listed&) const = default;
};

std::vector<Listed> list_shard_folder(const std::string& root, RecordFormat format) {
  RT_CHECK(fs::is_directory(root), "shard folder '", root, "' does not exist or is not a folder");
  const auto container = [&](const fs::path& p) {
    return format == RecordFormat::kTar ? p.extension() == ".tar" : p.extension() != ".idx";
  };
  std::vector<Listed> out;
  for (const fs::directory_entry& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.starts_with(".")) continue;
    if (container(e.path()) || name == kClassList)
      out.push_back({name, static_cast<uint64_t>(e.file_size()), mtime_ns(e.path().string())});
  }
  std::sort(out.begin(), out.end(), [](const Listed& a, const Listed& b) { return a.name < b.name; });
  return out;
}

// More classes than any model here has: a label beyond is damage, not a class.
constexpr int64_t kMostClasses = 1 << 20;

// A label member's text; a member too long to be one reads as empty (not a class).
std::string read_label(const ReadOnlyFile& file, const TarMember& m) {
  if (m.size > 64) return std::string();
  std::string text(m.size, '\0');
  file.read(m.offset, text.data(), text.size());
  return text;
}

// A class index as .cls holds it: decimal digits, surrounding white space allowed.
bool parse_label(std::string text, int64_t& label) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  text.erase(text.begin(), std::find_if_not(text.begin(), text.end(), space));
  text.erase(std::find_if_not(text.rbegin(), text.rend(), space).base(), text.end());
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), label);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size() && label >= 0;
}

// One shard's samples appended to index (container number c).
void index_shard(const std::string& root, const std::string& shard, uint32_t c, ImageIndex& index,
                 int64_t class_limit) {
  const std::string path = root + "/" + shard;
  const TarListing listing = list_tar_members(path);
  const ReadOnlyFile file(path, "tar shard");
  struct Sample {
    const TarMember* image = nullptr;
    const TarMember* label = nullptr;
  };
  // Members of one key are consecutive in WebDataset's layout; a map keeps any order working.
  std::vector<std::string> keys;
  std::map<std::string, Sample> samples;
  for (const TarMember& m : listing.members) {
    const auto [key, ext] = key_and_extension(m.name);
    const bool is_label = ext == "cls", is_image = image_extension(ext);
    if (!is_label && !is_image) continue;
    auto [it, fresh] = samples.try_emplace(key);
    if (fresh) keys.push_back(key);
    const TarMember*& slot = is_label ? it->second.label : it->second.image;
    if (slot)
      index.left_out.push_back(str_cat("'", path, "' member '", m.name, "': a second ", is_label ? "label" : "image",
                                       " for key '", key, "' (the first, '", slot->name, "', is used)"));
    else
      slot = &m;
  }
  const auto name = [&](const std::string& member) { return str_cat("'", path, "' member '", member, "'"); };
  for (const std::string& key : keys) {
    const Sample& s = samples[key];
    if (!s.image) {
      index.left_out.push_back(str_cat(name(s.label->name), ": a label with no image beside it"));
      continue;
    }
    if (s.image->name.find_first_of("\t\n") != std::string::npos) {
      index.left_out.push_back(str_cat(name(s.image->name), ": a name with a tab or newline"));
      continue;
    }
    if (!s.label) {
      index.left_out.push_back(str_cat(name(s.image->name), ": no label (expected '", key, ".cls' beside it)"));
      continue;
    }
    int64_t label = 0;
    const std::string text = read_label(file, *s.label);
    if (!parse_label(text, label)) {
      index.left_out.push_back(
          str_cat(name(s.label->name), ": holds '", text.substr(0, 40), "', not a class index (0, 1, 2...)"));
      continue;
    }
    if (label >= (class_limit > 0 ? class_limit : kMostClasses)) {
      index.left_out.push_back(
          class_limit > 0 ? str_cat(name(s.label->name), ": class ", label, ", but ", kClassList, " lists ",
                                    class_limit, " classes (0 to ", class_limit - 1, ")")
                          : str_cat(name(s.label->name), ": class ", label, ", more than ", kMostClasses, " classes"));
      continue;
    }
    index.files.push_back(s.image->name);
    index.labels.push_back(static_cast<int32_t>(label));
    index.spans.push_back({c, s.image->offset, s.image->size});
  }
  if (!listing.damage.empty())
    index.left_out.push_back(str_cat(listing.damage, "; the members before it are used, the rest left out"));
}

// One TFRecord file's records appended to index (container number c), their labels unknown (-1).
void index_tfrecord_file(const std::string& root, const std::string& file, uint32_t c, ImageIndex& index) {
  const TfRecordListing listing = list_tfrecords(root + "/" + file);
  for (size_t r = 0; r < listing.offsets.size(); ++r) {
    index.files.push_back(str_cat("offset ", listing.offsets[r]));
    index.labels.push_back(-1);
    index.spans.push_back({c, listing.offsets[r], listing.sizes[r]});
  }
  if (!listing.damage.empty())
    index.left_out.push_back(str_cat(listing.damage, "; the records before it are used, the rest left out"));
}

std::vector<std::string> read_class_list(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> classes;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) classes.push_back(line);
  RT_CHECK(!in.bad() && !classes.empty(), "class list '", path, "' is unreadable or empty (one class name per line)");
  return classes;
}

ImageIndex scan(const std::string& root, const std::vector<Listed>& listed, RecordFormat format) {
  ImageIndex index;
  index.root = root;
  index.format = format;
  const bool class_list =
      std::any_of(listed.begin(), listed.end(), [](const Listed& l) { return l.name == kClassList; });
  if (class_list) index.classes = read_class_list(root + "/" + kClassList);
  for (const Listed& l : listed) {
    if (l.name == kClassList) continue;
    const auto c = static_cast<uint32_t>(index.containers.size());
    if (format == RecordFormat::kTar)
      index_shard(root, l.name, c, index, static_cast<int64_t>(index.classes.size()));
    else
      index_tfrecord_file(root, l.name, c, index);
    index.containers.push_back(l.name);
  }
  RT_CHECK(!index.containers.empty(), "shard folder '", root, "' has no ",
           format == RecordFormat::kTar ? ".tar shards" : "TFRecord files");
  RT_CHECK(!index.files.empty(), "shard folder '", root, "' has no usable samples in its ", index.containers.size(),
           format == RecordFormat::kTar ? " shards" : " TFRecord files",
           index.left_out.empty() ? "" : str_cat(" (the first problem: ", index.left_out[0], ")"));
  if (!class_list && format == RecordFormat::kTar) {
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
  if (line == header_of(RecordFormat::kTfRecord))
    index.format = RecordFormat::kTfRecord;
  else if (line != header_of(RecordFormat::kTar))
    return false;
  const bool known_labels = index.format == RecordFormat::kTar;
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

ImageIndex scan_shard_folder(const std::string& root, RecordFormat format) {
  const std::vector<Listed> listed = list_shard_folder(root, format);
  ImageIndex index = scan(root, listed, format);
  index.indexed_files = listed_text(listed);
  return index;
}

std::string shard_index_text(const ImageIndex& index) {
  std::string text = str_cat(
      header_of(index.format), "\n",
      index.indexed_files.empty() ? listed_text(list_shard_folder(index.root, index.format)) : index.indexed_files);
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

ImageIndex shard_index_from_text(const std::string& root, const std::string& text) {
  ImageIndex index;
  index.root = root;
  std::istringstream in(text);
  RT_CHECK(parse(in, nullptr, index), "the shard index of '", root, "' received from rank 0 is malformed");
  return index;
}

ImageIndex load_shard_index(const std::string& root, std::string cache_path, bool rebuild, RecordFormat format) {
  const std::vector<Listed> listed = list_shard_folder(root, format);
  if (cache_path.empty())
    cache_path = root + (format == RecordFormat::kTar ? "/.ringtrain_shards.tsv" : "/.ringtrain_tfrecords.tsv");
  if (!rebuild) {
    ImageIndex cached;
    cached.root = root;
    std::ifstream in(cache_path);
    if (parse(in, &listed, cached) && cached.format == format) return cached;
  }
  ImageIndex index = scan(root, listed, format);
  index.indexed_files = listed_text(listed);
  // A file that changed while it was indexed (a copy still running) leaves no cache to trust.
  if (list_shard_folder(root, format) == listed)
    write_index_cache(cache_path, shard_index_text(index));
  else
    stderr_line(str_cat("ringtrain: warning: the files of '", root, "' changed while they were indexed; ",
                        "the index is used but not cached"));
  return index;
}

void leave_out_labels_from(ImageIndex& index, int64_t num_classes) {
  if (index.format == RecordFormat::kTfRecord) {
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
