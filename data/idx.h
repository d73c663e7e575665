// IDX reader (the MNIST / Fashion-MNIST container): gzip'd or raw, unsigned-byte elements only.
// read_idx either returns the whole array, with every dim > 0 and data.size() == product of dims,
// or throws rt::Error naming the file and what was expected (bad magic, unsupported type,
// truncated or over-long payload, unreadable file, corrupt gzip stream).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rt {

struct IdxArray {
  std::vector<int64_t> dims;  // outermost first, e.g. (N, H, W) for images, (N) for labels
  std::vector<uint8_t> data;  // row-major, product of dims bytes
};

// Reads an IDX file; gzip is detected by the 1f 8b magic, anything else is read as raw IDX.
IdxArray read_idx(const std::string& path);

}  // namespace rt
