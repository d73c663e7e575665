// TFRecord framing (base/tfrecord.h). The CRC is Boost.CRC's table-driven one, spelt with the
// Castagnoli polynomial's parameters; a record of a training step is about 150 bytes, whose two
// CRCs take about a microsecond.
#include "base/tfrecord.h"

#include <boost/crc.hpp>

namespace rt {
namespace {

using Crc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  Crc32c crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_le(out, data.size(), 8);
  put_le(out, masked_crc32c(out), 4);
  out += data;
  put_le(out, masked_crc32c(data), 4);
  return out;
}

}  // namespace rt
