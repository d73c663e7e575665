#include "data/tf_example.h"

#include <cstring>
#include <string_view>

#include "base/check.h"
#include "base/tfrecord.h"
#include "data/read_only_file.h"

namespace rt {
namespace {

uint64_t little_endian(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

std::string_view chars(std::span<const uint8_t> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

// A protobuf message's fields, one at a time; false from next() at the end. Malformed input
// (a varint of more than 10 bytes, a length past the end, a group or unknown wire type) throws.
class WireReader {
 public:
  WireReader(std::span<const uint8_t> bytes, const std::string& name) : b_(bytes), name_(name) {}

  bool next() {
    if (at_ == b_.size()) return false;
    const uint64_t tag = varint();
    field_ = tag >> 3;
    type_ = static_cast<int>(tag & 7);
    switch (type_) {
      case 0:
        value_ = varint();
        break;
      case 1:
        bytes_ = take(8);
        break;
      case 2: {
        const uint64_t n = varint();
        need(n <= b_.size() - at_, "a length past the message's end");
        bytes_ = take(static_cast<size_t>(n));
        break;
      }
      case 5:
        bytes_ = take(4);
        break;
      default:
        need(false, str_cat("wire type ", type_, " (groups are not used by tf.Example)"));
    }
    return true;
  }
  uint64_t field() const { return field_; }
  bool is_bytes() const { return type_ == 2; }
  bool is_varint() const { return type_ == 0; }
  std::span<const uint8_t> bytes() const { return bytes_; }
  uint64_t value() const { return value_; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      need(at_ < b_.size(), "a varint cut short");
      const uint8_t byte = b_[at_++];
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
    need(false, "a varint of more than 10 bytes");
    return 0;
  }

 private:
  std::span<const uint8_t> take(size_t n) {
    need(n <= b_.size() - at_, "a field past the message's end");
    const auto s = b_.subspan(at_, n);
    at_ += n;
    return s;
  }
  void need(bool holds, const std::string& what) const { RT_CHECK(holds, name_, ": not a tf.Example: ", what); }

  std::span<const uint8_t> b_;
  const std::string& name_;
  size_t at_ = 0;
  uint64_t field_ = 0, value_ = 0;
  int type_ = 0;
  std::span<const uint8_t> bytes_;
};

}  // namespace

TfRecordListing list_tfrecords(const std::string& path) {
  const ReadOnlyFile file(path, "TFRecord file");
  const uint64_t size = file.size();
  TfRecordListing out;
  uint64_t at = 0;
  while (at < size) {
    uint8_t h[12];
    if (size - at < 12) {
      out.damage = str_cat("'", path, "' ends inside a record's header at offset ", at, ": truncated");
      break;
    }
    file.read(at, h, 12);
    const uint64_t length = little_endian(h, 8);
    if (masked_crc32c(std::string_view(reinterpret_cast<const char*>(h), 8)) != little_endian(h + 8, 4)) {
      out.damage =
          str_cat("the record at offset ", at, " of '", path, "' has a length whose CRC fails (damaged there)");
      break;
    }
    if (length > size - at - 12 || size - at - 12 - length < 4) {
      out.damage = str_cat("the record at offset ", at, " of '", path, "' runs past the end of the file (", length,
                           " bytes declared): truncated");
      break;
    }
    out.offsets.push_back(at);
    out.sizes.push_back(length + 16);
    at += length + 16;
  }
  return out;
}

std::span<const uint8_t> tfrecord_data(std::span<const uint8_t> record, const std::string& name) {
  RT_CHECK(record.size() >= 16, name, ": a record of ", record.size(), " bytes, shorter than its framing");
  const uint64_t length = little_endian(record.data(), 8);
  RT_CHECK(length == record.size() - 16, name, ": the record's length (", length, ") is not the index's (",
           record.size() - 16, "): the index no longer matches the file (data.rebuild_index = true rebuilds it)");
  RT_CHECK(masked_crc32c(chars(record.first(8))) == little_endian(record.data() + 8, 4), name,
           ": the record's length fails its CRC");
  const auto data = record.subspan(12, length);
  RT_CHECK(masked_crc32c(chars(data)) == little_endian(record.data() + 12 + length, 4), name,
           ": the record's data fails its CRC (damaged)");
  return data;
}

ImageExample parse_image_example(std::span<const uint8_t> data, const std::string& name) {
  ImageExample out;
  bool has_image = false, has_label = false;
  WireReader example(data, name);
  while (example.next()) {
    if (example.field() != 1 || !example.is_bytes()) continue;  // Example.features
    WireReader features(example.bytes(), name);
    while (features.next()) {
      if (features.field() != 1 || !features.is_bytes()) continue;  // a map entry of Features.feature
      WireReader entry(features.bytes(), name);
      std::string_view key;
      std::span<const uint8_t> feature;
      while (entry.next()) {
        if (entry.field() == 1 && entry.is_bytes()) key = chars(entry.bytes());
        if (entry.field() == 2 && entry.is_bytes()) feature = entry.bytes();
      }
      if (key != "image/encoded" && key != "image/class/label") continue;
      WireReader kind(feature, name);
      while (kind.next()) {
        if (!kind.is_bytes()) continue;
        WireReader list(kind.bytes(), name);
        if (key == "image/encoded" && kind.field() == 1) {  // BytesList.value
          while (list.next())
            if (list.field() == 1 && list.is_bytes() && !has_image) out.image = list.bytes(), has_image = true;
        } else if (key == "image/class/label" && kind.field() == 3) {  // Int64List.value
          while (list.next()) {
            if (list.field() != 1 || has_label) continue;
            if (list.is_varint()) {
              out.label = static_cast<int64_t>(list.value()), has_label = true;
            } else if (list.is_bytes() && !list.bytes().empty()) {  // packed
              WireReader packed(list.bytes(), name);
              out.label = static_cast<int64_t>(packed.varint()), has_label = true;
            }
          }
        }
      }
    }
  }
  RT_CHECK(has_image, name, ": the tf.Example has no image/encoded bytes");
  RT_CHECK(has_label, name, ": the tf.Example has no image/class/label");
  return out;
}

}  // namespace rt
