// TFRecord framing, the container of TensorBoard's event files: each record is
//   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes | data | uint32 masked CRC32C of data
// (both CRCs little-endian). A reader checks both CRCs, so it stops at a record cut short by a
// crash instead of misreading it; a writer that appends whole records leaves a file readable up
// to its last one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rt {

// CRC-32C (Castagnoli, reflected, initial and final value 0xFFFFFFFF): "123456789" -> 0xE3069283.
uint32_t crc32c(std::string_view bytes);
// The masked form TFRecord stores: rotate right by 15 bits, add 0xa282ead8, so that a CRC of
// data that itself holds CRCs is not a CRC of the same shape.
uint32_t masked_crc32c(std::string_view bytes);
// `data` framed as one record.
std::string tfrecord(std::string_view data);

}  // namespace rt
