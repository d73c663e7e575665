// The safetensors file format (weights shared with PyTorch, checkpoints): 8-byte little-endian
// header length N, N bytes of JSON header (padded with spaces to a multiple of 8 when we write),
// then one byte buffer that the tensors cover exactly, without gaps or overlap.
// Reading validates everything; every error is an rt::Error naming the file and, where one is
// involved, the tensor. Tensors come back in the order of their bytes in the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rt {

enum class DType { kF32, kF64, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };

size_t dtype_size(DType dtype);            // bytes per element
std::string_view dtype_name(DType dtype);  // as written in the header: "F32", "BF16", "BOOL", ...

struct StTensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // empty: a scalar (one element)
  std::vector<uint8_t> bytes;  // little-endian, row-major; size = product(shape) * dtype_size
};

struct StFile {
  std::vector<std::pair<std::string, std::string>> metadata;  // "__metadata__", in header order
  std::vector<std::pair<std::string, StTensor>> tensors;      // in file order
  const StTensor* find(std::string_view name) const;          // nullptr if absent
  std::string meta(std::string_view key) const;               // "" if absent
};

// Tensors are written in the given order, contiguous. Rejects duplicate names, the reserved name
// "__metadata__", negative dimensions and byte counts that do not match shape and dtype.
std::string serialize_safetensors(const StFile& file);
void write_safetensors(const std::string& path, const StFile& file);  // via write_file_atomically

// `source_name` (usually the path) is what error messages call the file.
StFile parse_safetensors(std::string_view bytes, const std::string& source_name);
StFile read_safetensors(const std::string& path);
// Only the "__metadata__" of the file at `path` (no tensors), reading no more than its header.
StFile read_safetensors_metadata(const std::string& path);

// `data` holds product(shape) floats (may be null when that is 0).
StTensor make_f32_tensor(std::vector<int64_t> shape, const float* data);
// F32 as is, F64 narrowed; any other dtype is an error naming `context` (e.g. "x.safetensors: conv1.weight").
std::vector<float> as_f32(const StTensor& tensor, const std::string& context);

}  // namespace rt
