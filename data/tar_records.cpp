// Tar shards in WebDataset's layout (data.source = "shards"; Note [Record formats]): each sample
// is consecutive members sharing a key, the image (<key>.jpg or another image extension) and
// <key>.cls, its class index as decimal text; the labels are read at indexing.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

#include "base/check.h"
#include "data/read_only_file.h"
#include "data/record_format.h"
#include "data/tar_members.h"

namespace rt {
namespace {

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

bool is_shard(const std::string& name) { return name.ends_with(".tar"); }

// The image member is the record: its bytes are the image, its label the index's.
RecordImage whole_member(std::span<const uint8_t> record, const std::string&) { return {record, std::nullopt}; }

}  // namespace

extern const RecordFormat kTarRecords = {.source = DataSource::kShards,
                                         .containers = ".tar shards",
                                         .cache_file = ".ringtrain_shards.tsv",
                                         .cache_header = "# ringtrain shard index v1",
                                         .labels_in_index = true,
                                         .holds = is_shard,
                                         .index = index_shard,
                                         .read = whole_member};

}  // namespace rt
