// IDX reader: parse the big-endian header, then stream exactly the expected payload and make sure
// nothing follows it. Memory grows with the bytes actually read, so a corrupt header that claims
// terabytes fails as "truncated" instead of trying to allocate them.
#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/check.h"

namespace rt {
namespace {

// Reads bytes from a raw file or a gzip stream, whichever the file's first two bytes say it is.
class ByteSource {
 public:
  explicit ByteSource(const std::string& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "rb");
    RT_CHECK(file_ != nullptr, path, ": cannot open IDX file: ", std::strerror(errno));
    unsigned char head[2] = {0, 0};
    const size_t got = std::fread(head, 1, 2, file_);
    if (std::ferror(file_)) {  // the destructor does not run when the constructor throws
      const int err = errno;
      std::fclose(file_);
      RT_CHECK(false, path, ": read error: ", std::strerror(err));
    }
    if (got == 2 && head[0] == 0x1f && head[1] == 0x8b) {
      std::fclose(file_);
      file_ = nullptr;
      gz_ = gzopen(path.c_str(), "rb");
      RT_CHECK(gz_ != nullptr, path, ": cannot open gzip file: ", std::strerror(errno));
      gzbuffer(gz_, 1 << 17);
    } else {
      std::rewind(file_);
    }
  }
  ~ByteSource() {
    if (file_) std::fclose(file_);
    if (gz_) gzclose(gz_);
  }
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Reads up to n bytes; fewer only at the end of the data. Corrupt gzip data throws; a gzip
  // stream cut short ends the data and sets gzip_truncated() so the caller can say so.
  size_t read(uint8_t* buf, size_t n) {
    if (file_) {
      const size_t got = std::fread(buf, 1, n, file_);
      RT_CHECK(!std::ferror(file_), path_, ": read error: ", std::strerror(errno));
      return got;
    }
    size_t total = 0;
    while (total < n) {
      const unsigned want = static_cast<unsigned>(std::min<size_t>(n - total, 1u << 30));
      const int got = gzread(gz_, buf + total, want);
      if (got > 0) {
        total += static_cast<size_t>(got);
        continue;
      }
      int err = Z_OK;
      std::string msg = gzerror(gz_, &err);
      if (msg.rfind(path_ + ": ", 0) == 0) msg.erase(0, path_.size() + 2);  // gzerror adds the path
      if (err == Z_BUF_ERROR) {  // zlib's "unexpected end of file": the .gz file is cut short
        gzip_truncated_ = true;
      } else {
        RT_CHECK(err == Z_OK, path_, err == Z_ERRNO ? ": read error: " : ": corrupt gzip stream: ", msg);
      }
      break;
    }
    return total;
  }

  bool gzip_truncated() const { return gzip_truncated_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
  bool gzip_truncated_ = false;
};

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

const char* idx_type_name(uint8_t type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "unknown";
  }
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

std::string hex8(uint8_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", v);
  return buf;
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += 'x';
    s += std::to_string(dims[i]);
  }
  return s;
}

std::string truncation_note(const ByteSource& src) {
  return src.gzip_truncated() ? " (the gzip stream itself ends early: the .gz file is cut short)" : "";
}

// Payloads above this are surely a corrupt header (Fashion-MNIST train images are 47 MB).
constexpr int64_t kMaxPayloadBytes = int64_t{1} << 40;
constexpr size_t kReadChunk = size_t{16} << 20;

}  // namespace

IdxArray read_idx(const std::string& path) {
  ByteSource src(path);
  uint8_t magic[4];
  const size_t magic_got = src.read(magic, 4);
  RT_CHECK(magic_got == 4, path, ": too short for an IDX header: found ", magic_got,
           " bytes, expected at least 4 bytes of magic", truncation_note(src));
  const std::string bad_magic =
      str_cat(path, ": bad magic ", hex32(big_endian_u32(magic)),
              ", expected 0x000008NN (two zero bytes, type 0x08 = unsigned byte, NN = number of dims 1..4), "
              "e.g. 0x00000801 (labels) or 0x00000803 (images): ");
  RT_CHECK(magic[0] == 0 && magic[1] == 0, bad_magic, "not an IDX file");
  RT_CHECK(magic[2] == 0x08, bad_magic, "element type ", hex8(magic[2]), " (", idx_type_name(magic[2]),
           ") is not supported");
  const int ndims = magic[3];
  RT_CHECK(ndims >= 1 && ndims <= 4, bad_magic, ndims, " dimensions is not supported");

  uint8_t dim_bytes[16];
  const size_t header_bytes = 4 * static_cast<size_t>(ndims);
  const size_t dims_got = src.read(dim_bytes, header_bytes);
  RT_CHECK(dims_got == header_bytes, path, ": truncated IDX header: expected ", header_bytes,
           " bytes of dimension sizes after the magic, found ", dims_got, truncation_note(src));

  IdxArray out;
  int64_t expected = 1;
  for (int d = 0; d < ndims; ++d) {
    const int64_t size = big_endian_u32(dim_bytes + 4 * d);
    RT_CHECK(size > 0, path, ": dimension ", d, " is 0, expected every dimension > 0");
    out.dims.push_back(size);
    RT_CHECK(expected <= kMaxPayloadBytes / size, path, ": dimensions ", dims_string(out.dims),
             "... give a payload over ", kMaxPayloadBytes, " bytes; the header is corrupt");
    expected *= size;
  }

  // Grow with the data actually present; see the file comment.
  size_t filled = 0;
  while (static_cast<int64_t>(filled) < expected) {
    const size_t want = std::min<size_t>(static_cast<size_t>(expected) - filled, kReadChunk);
    out.data.resize(filled + want);
    const size_t got = src.read(out.data.data() + filled, want);
    filled += got;
    if (got < want) break;
  }
  RT_CHECK(static_cast<int64_t>(filled) == expected, path, ": truncated: dims ", dims_string(out.dims), " need ",
           expected, " payload bytes after the ", 4 + header_bytes, "-byte header, found ", filled,
           truncation_note(src));

  uint8_t scratch[4096];
  int64_t trailing = 0;
  for (size_t got; (got = src.read(scratch, sizeof scratch)) > 0;) trailing += static_cast<int64_t>(got);
  RT_CHECK(trailing == 0, path, ": ", trailing, " trailing bytes after the expected ", expected,
           " payload bytes (dims ", dims_string(out.dims), ")");
  RT_CHECK(!src.gzip_truncated(), path,
           ": the gzip stream ends early (missing its end marker or "
           "checksum): the .gz file is cut short");
  return out;
}

}  // namespace rt
