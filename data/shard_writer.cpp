#include "data/shard_writer.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <span>

#include "base/check.h"
#include "data/image_decode.h"
#include "data/jpeg_decode.h"
#include "data/record_format.h"

namespace fs = std::filesystem;

namespace rt {
namespace {

constexpr uint64_t kBlock = 512;

// The extension a sample's bytes are stored under, from their content (decoding goes by content
// too; "img" for what is not recognised, which training then skips as it would the file).
const char* extension_of(std::span<const uint8_t> b) {
  const auto starts = [&](const char* magic) {
    const size_t n = std::strlen(magic);
    return b.size() >= n && std::memcmp(b.data(), magic, n) == 0;
  };
  if (looks_like_jpeg(b)) return "jpg";
  if (starts("\x89PNG")) return "png";
  if (starts("GIF8")) return "gif";
  if (starts("BM")) return "bmp";
  return "img";
}

// The sample's key: its path without the extension, with dots (which end a WebDataset key) as _.
std::string key_of(const std::string& file) {
  fs::path p(file);
  std::string stem = p.stem().string();
  for (char& c : stem)
    if (c == '.') c = '_';
  const std::string dir = p.parent_path().generic_string();
  return dir.empty() ? stem : dir + "/" + stem;
}

void octal(char* field, size_t width, uint64_t value) {
  std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1), static_cast<unsigned long long>(value));
}

std::array<char, kBlock> header(const std::string& name, uint64_t size, char type) {
  std::array<char, kBlock> h{};
  std::memcpy(h.data(), name.data(), std::min<size_t>(name.size(), 100));
  octal(h.data() + 100, 8, 0644);
  octal(h.data() + 108, 8, 0);
  octal(h.data() + 116, 8, 0);
  octal(h.data() + 124, 12, size);
  octal(h.data() + 136, 12, 0);  // time 0: the same folder packs to the same bytes
  h[156] = type;
  std::memcpy(h.data() + 257,
              "ustar\0"
              "00",
              8);
  std::memset(h.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  std::snprintf(h.data() + 148, 8, "%06o", sum);  // six digits, NUL, and the space already there
  return h;
}

class TarWriter {
 public:
  explicit TarWriter(const std::string& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
    RT_CHECK(out_.good(), "cannot create shard '", path, "'");
  }
  // The bytes a member takes: headers, data and padding.
  static uint64_t footprint(const std::string& name, uint64_t size) {
    return (name.size() > 100 ? 2 * kBlock + pax_record(name).size() : 0) + kBlock + padded(size);
  }
  void add(const std::string& name, std::span<const uint8_t> data) {
    RT_CHECK(data.size() < (uint64_t{1} << 33), "'", name, "' is 8 GiB or more, too large for a tar member");
    if (name.size() > 100) {
      const std::string pax = pax_record(name);
      block(header("PaxHeader", pax.size(), 'x'));
      bytes(pax.data(), pax.size());
    }
    block(header(name, data.size(), '0'));
    bytes(data.data(), data.size());
  }
  uint64_t written() const { return written_; }
  void close() {
    static const std::array<char, 2 * kBlock> end{};
    out_.write(end.data(), end.size());
    out_.close();
    RT_CHECK(!out_.fail(), "cannot write shard '", path_, "' (disk full?)");
  }

 private:
  static uint64_t padded(uint64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }
  // "<length> path=<name>\n", the length counting its own digits.
  static std::string pax_record(const std::string& name) {
    const std::string body = " path=" + name + "\n";
    size_t length = body.size() + 1;
    while (std::to_string(length).size() + body.size() != length) ++length;
    return std::to_string(length) + body;
  }
  void block(const std::array<char, kBlock>& h) { bytes(h.data(), h.size()); }
  void bytes(const void* p, uint64_t n) {
    static const std::array<char, kBlock> zeros{};
    out_.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
    out_.write(zeros.data(), static_cast<std::streamsize>(padded(n) - n));
    written_ += padded(n);
    RT_CHECK(out_.good(), "cannot write shard '", path_, "' (disk full?)");
  }

  std::string path_;
  std::ofstream out_;
  uint64_t written_ = 0;
};

}  // namespace

PackedShards pack_shards(const ImageIndex& index, const std::string& out_dir, const std::string& prefix,
                         uint64_t shard_bytes, const std::function<void(int64_t)>& progress) {
  fs::create_directories(out_dir);
  for (const fs::directory_entry& e : fs::directory_iterator(out_dir))
    RT_CHECK(e.path().extension() != ".tar", "'", out_dir, "' already holds shards (", e.path().filename().string(),
             "); pack into an empty folder");
  {
    std::ofstream classes(fs::path(out_dir) / kClassList, std::ios::trunc);
    for (const std::string& c : index.classes) {
      RT_CHECK(c.find('\n') == std::string::npos, "class name '", c, "' holds a newline");
      classes << c << "\n";
    }
    RT_CHECK(classes.good(), "cannot write '", out_dir, "/", kClassList, "'");
  }
  PackedShards done;
  std::unique_ptr<TarWriter> shard;
  const auto close_shard = [&] {
    if (!shard) return;
    shard->close();
    done.bytes += shard->written() + 2 * kBlock;
    shard.reset();
  };
  std::set<std::string> keys;
  for (size_t i = 0; i < index.files.size(); ++i) {
    const std::vector<uint8_t> image = read_file_bytes(index.path(i));
    std::string key = key_of(index.files[i]);
    if (!keys.insert(key).second) keys.insert(key += str_cat("_", i));  // x.y.jpg beside x_y.jpg

    const std::string image_name = key + "." + extension_of(image), label_name = key + ".cls";
    const std::string label = std::to_string(index.labels[i]);
    const uint64_t size =
        TarWriter::footprint(image_name, image.size()) + TarWriter::footprint(label_name, label.size());
    if (shard && shard->written() + size + 2 * kBlock > shard_bytes) close_shard();
    if (!shard) {
      char name[32];
      std::snprintf(name, sizeof name, "-%06lld.tar", static_cast<long long>(done.shards++));
      shard = std::make_unique<TarWriter>((fs::path(out_dir) / (prefix + name)).string());
    }
    shard->add(image_name, image);
    shard->add(label_name, std::span(reinterpret_cast<const uint8_t*>(label.data()), label.size()));
    ++done.samples;
    if (progress) progress(done.samples);
  }
  close_shard();
  return done;
}

}  // namespace rt
