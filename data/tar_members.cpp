#include "data/tar_members.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <string_view>

#include "base/check.h"
#include "data/read_only_file.h"

namespace rt {
namespace {

constexpr uint64_t kBlock = 512;

uint64_t padded(uint64_t size) { return (size + kBlock - 1) / kBlock * kBlock; }

std::string field(const char* p, size_t n) { return std::string(p, strnlen(p, n)); }

// An octal number, or GNU's base-256 (first byte's high bit set) for sizes of 8 GiB and more.
bool parse_number(const unsigned char* p, size_t n, uint64_t& out) {
  out = 0;
  if (p[0] & 0x80) {  // big-endian after the flag byte; more than 64 bits is no size
    for (size_t i = 1; i < n; ++i) {
      if (i + 8 < n && p[i] != 0) return false;
      out = out << 8 | p[i];
    }
    return true;
  }
  size_t i = 0;
  while (i < n && p[i] == ' ') ++i;
  bool any = false;
  for (; i < n && p[i] >= '0' && p[i] <= '7'; ++i, any = true) out = out * 8 + (p[i] - '0');
  return any && (i == n || p[i] == ' ' || p[i] == '\0');
}

// The header's checksum: its bytes summed with the checksum field read as spaces.
bool checksum_holds(const std::array<unsigned char, kBlock>& h) {
  uint64_t stored = 0;
  if (!parse_number(h.data() + 148, 8, stored)) return false;
  uint64_t sum = 0;
  for (size_t i = 0; i < kBlock; ++i) sum += (i >= 148 && i < 156) ? ' ' : h[i];
  return sum == stored;
}

// Decimal digits only (no sign, no spaces), as PAX writes lengths and sizes.
bool decimal(std::string_view s, uint64_t& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// PAX records, "<length> <key>=<value>\n" with length counting the whole record: the path and
// size they override. False where a record is malformed.
bool read_pax(const std::string& text, std::string& path, uint64_t& size, bool& has_size) {
  size_t at = 0;
  while (at < text.size()) {
    const size_t space = text.find(' ', at);
    uint64_t length = 0;
    if (space == std::string::npos || !decimal(std::string_view(text).substr(at, space - at), length) ||
        length < space - at + 2 || length > text.size() - at || text[at + length - 1] != '\n')
      return false;
    const std::string record = text.substr(space + 1, at + length - space - 2);  // without the newline
    const size_t eq = record.find('=');
    if (eq != std::string::npos) {
      const std::string key = record.substr(0, eq), value = record.substr(eq + 1);
      if (key == "path") path = value;
      if (key == "size") {
        if (!decimal(value, size)) return false;
        has_size = true;
      }
    }
    at += length;
  }
  return true;
}

}  // namespace

TarListing list_tar_members(const std::string& path) {
  const ReadOnlyFile file(path, "tar shard");
  TarListing out;
  std::string long_name, pax_path;  // for the next member only
  uint64_t pax_size = 0;
  bool pax_has_size = false;
  uint64_t at = 0;
  std::array<unsigned char, kBlock> h{};
  while (at + kBlock <= file.size()) {
    file.read(at, h.data(), kBlock);
    if (std::all_of(h.begin(), h.end(), [](unsigned char c) { return c == 0; })) return out;  // the end blocks
    const std::string where = str_cat("offset ", at, " of '", path, "'");
    if (!checksum_holds(h)) {
      out.damage = str_cat("the tar header at ", where, " fails its checksum (not a tar file, or damaged there)");
      return out;
    }
    uint64_t size = 0;
    if (!parse_number(h.data() + 124, 12, size)) {
      out.damage = str_cat("the tar header at ", where, " has no readable size");
      return out;
    }
    const char type = static_cast<char>(h[156]);
    std::string name = field(reinterpret_cast<const char*>(h.data()), 100);
    // POSIX ustar ("ustar\0") puts a path's leading part in prefix; GNU's "ustar " uses it otherwise.
    if (std::memcmp(h.data() + 257, "ustar\0", 6) == 0) {
      const std::string prefix = field(reinterpret_cast<const char*>(h.data()) + 345, 155);
      if (!prefix.empty()) name = prefix + "/" + name;
    }
    if (pax_has_size) size = pax_size;
    const uint64_t data = at + kBlock;
    if (size > file.size() - data) {  // not data + size: a size near 2^64 would wrap
      out.damage = str_cat("member '", long_name.empty() ? (pax_path.empty() ? name : pax_path) : long_name, "' at ",
                           where, " runs past the end of the file (", size, " bytes declared, ", file.size() - data,
                           " left): the shard is truncated");
      return out;
    }
    if (type == 'L' || type == 'x') {
      std::string text(size, '\0');
      file.read(data, text.data(), size);
      if (type == 'L') {
        long_name = field(text.data(), text.size());
      } else if (!read_pax(text, pax_path, pax_size, pax_has_size)) {
        out.damage = str_cat("the PAX header at ", where, " is malformed");
        return out;
      }
    } else {
      if (type == '0' || type == '\0' || type == '7') {
        if (!pax_path.empty())
          name = pax_path;
        else if (!long_name.empty())
          name = long_name;
        out.members.push_back({name, data, size});
      }
      long_name.clear();
      pax_path.clear();
      pax_has_size = false;
    }
    at = data + padded(size);
  }
  if (at < file.size()) out.damage = str_cat("'", path, "' ends inside a tar header at offset ", at, ": truncated");
  return out;
}

}  // namespace rt
