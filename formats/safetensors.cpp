// safetensors reading (fully validated) and writing (formats/safetensors.h).
#include "formats/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <unordered_set>

#include "formats/atomic_file.h"
#include "formats/json.h"
#include "base/check.h"

namespace rt {
namespace {

// Tensor bytes are copied as they are: the format and our host are both little-endian.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

// The reference implementation's limit; a larger value means the file is not safetensors.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr std::string_view kMetadataKey = "__metadata__";

constexpr DType kAllDTypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI64,
                                DType::kI32, DType::kI16, DType::kI8,  DType::kU8,   DType::kBool};

// An integer literal that fits int64 (nlohmann keeps non-negative ones as unsigned, larger ones
// as unsigned too, and reads 2e3 as a float).
bool is_int64(const Json& v) {
  return v.is_number_integer() && (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX));
}

bool parse_dtype(std::string_view name, DType* out) {
  for (DType d : kAllDTypes) {
    if (dtype_name(d) == name) {
      *out = d;
      return true;
    }
  }
  return false;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Bytes a tensor of this shape and dtype needs; false when a dimension is negative or the count
// overflows uint64 (no file can hold such a tensor).
bool byte_count(const std::vector<int64_t>& shape, DType dtype, uint64_t* out) {
  uint64_t n = dtype_size(dtype);
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return false;
  }
  *out = n;
  return true;
}

std::string serialize(const StFile& file, const std::string& dest) {
  Json header = Json::object();  // in insertion order; names are checked for repeats as they come
  if (!file.metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [key, value] : file.metadata) {
      RT_CHECK(!meta.contains(key), dest, ": metadata key \"", key, "\" given twice");
      meta[key] = value;
    }
    header[std::string(kMetadataKey)] = std::move(meta);
  }
  std::unordered_set<std::string_view> names;
  uint64_t offset = 0;
  for (const auto& [name, t] : file.tensors) {
    RT_CHECK(name != kMetadataKey, dest, ": \"", kMetadataKey, "\" is reserved and cannot name a tensor");
    RT_CHECK(names.insert(name).second, dest, ": tensor \"", name, "\" given twice");
    uint64_t need = 0;
    RT_CHECK(byte_count(t.shape, t.dtype, &need), dest, ": tensor \"", name, "\": invalid shape ", shape_text(t.shape));
    RT_CHECK(need == t.bytes.size(), dest, ": tensor \"", name, "\": shape ", shape_text(t.shape), " of ",
             dtype_name(t.dtype), " needs ", need, " bytes but it holds ", t.bytes.size());
    header[name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + need}}};
    offset += need;
  }
  std::string text = to_json(header);
  // Spaces up to a multiple of 8 keep the buffer 8-byte aligned when the file is mapped.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + text.size() + offset);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
  out += text;
  for (const auto& [name, t] : file.tensors) out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return out;
}

struct Entry {
  std::string name;
  StTensor tensor;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// One "name": {"dtype", "shape", "data_offsets"} member, checked against the buffer size.
Entry parse_entry(const std::string& src, const std::string& name, const Json& v, uint64_t buffer_size) {
  const std::string where = str_cat(src, ": tensor \"", name, "\"");
  RT_CHECK(v.is_object(), where, ": header entry is ", to_json(v),
           ", expected an object with dtype, shape, data_offsets");
  for (const auto& [key, unused] : v.items()) {
    RT_CHECK(key == "dtype" || key == "shape" || key == "data_offsets", where, ": unknown field \"", key,
             "\" (expected dtype, shape, data_offsets)");
  }
  Entry e;
  e.name = name;

  RT_CHECK(v.contains("dtype"), where, ": missing \"dtype\"");
  const Json& dtype = v["dtype"];
  RT_CHECK(dtype.is_string() && parse_dtype(dtype.get_ref<const std::string&>(), &e.tensor.dtype), where,
           ": unknown dtype ", to_json(dtype), " (supported: F32 F64 F16 BF16 I64 I32 I16 I8 U8 BOOL)");

  RT_CHECK(v.contains("shape"), where, ": missing \"shape\"");
  const Json& shape = v["shape"];
  RT_CHECK(shape.is_array(), where, ": shape ", to_json(shape), " is not a list of non-negative integers");
  for (const Json& d : shape) {
    RT_CHECK(is_int64(d) && d.get<int64_t>() >= 0, where, ": shape ", to_json(shape),
             " is not a list of non-negative integers");
    e.tensor.shape.push_back(d.get<int64_t>());
  }

  RT_CHECK(v.contains("data_offsets"), where, ": missing \"data_offsets\"");
  const Json& offsets = v["data_offsets"];
  const bool pair = offsets.is_array() && offsets.size() == 2 && is_int64(offsets[0]) && is_int64(offsets[1]) &&
                    offsets[0].get<int64_t>() >= 0 && offsets[0].get<int64_t>() <= offsets[1].get<int64_t>();
  RT_CHECK(pair, where, ": data_offsets ", to_json(offsets), " is not [begin, end] with 0 <= begin <= end");
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();

  uint64_t need = 0;
  const bool fits = byte_count(e.tensor.shape, e.tensor.dtype, &need);
  RT_CHECK(fits && need == e.end - e.begin, where, ": data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin,
           " bytes but shape ", shape_text(e.tensor.shape), " of ", dtype_name(e.tensor.dtype), " needs ",
           fits ? std::to_string(need) : std::string("more than 2^64"));
  RT_CHECK(e.end <= buffer_size, where, ": data_offsets [", e.begin, ", ", e.end, "] reach past the end of the ",
           buffer_size, "-byte data buffer (file truncated?)");
  return e;
}

}  // namespace

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
      return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      return 1;
  }
  RT_ASSERT(false);
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF64:
      return "F64";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kI64:
      return "I64";
    case DType::kI32:
      return "I32";
    case DType::kI16:
      return "I16";
    case DType::kI8:
      return "I8";
    case DType::kU8:
      return "U8";
    case DType::kBool:
      return "BOOL";
  }
  RT_ASSERT(false);
}

const StTensor* StFile::find(std::string_view name) const {
  for (const auto& [n, t] : tensors) {
    if (n == name) return &t;
  }
  return nullptr;
}

std::string StFile::meta(std::string_view key) const {
  for (const auto& [k, v] : metadata) {
    if (k == key) return v;
  }
  return "";
}

std::string serialize_safetensors(const StFile& file) { return serialize(file, "safetensors output"); }

void write_safetensors(const std::string& path, const StFile& file) {
  write_file_atomically(path, serialize(file, path));
}

StFile parse_safetensors(std::string_view bytes, const std::string& source_name) {
  const std::string& src = source_name;
  RT_CHECK(bytes.size() >= 8, src, ": not a safetensors file: ", bytes.size(),
           " bytes, shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  RT_CHECK(n <= kMaxHeaderBytes, src, ": header length ", n, " exceeds the ", kMaxHeaderBytes,
           "-byte limit (not a safetensors file?)");
  RT_CHECK(n <= bytes.size() - 8, src, ": header length ", n, " runs past the end of the ", bytes.size(),
           "-byte file (truncated?)");
  const std::string_view header = bytes.substr(8, n);
  const std::string_view buffer = bytes.substr(8 + n);

  const Json root = parse_json(header, src + " header");  // duplicate names are rejected here
  RT_CHECK(root.is_object(), src, ": header is ", to_json(root).substr(0, 80), ", expected a JSON object");

  StFile file;
  std::vector<Entry> entries;
  for (const auto& [key, value] : root.items()) {
    if (key == kMetadataKey) {
      RT_CHECK(value.is_object(), src, ": __metadata__ is ", to_json(value).substr(0, 80),
               ", expected an object of strings");
      for (const auto& [mkey, mvalue] : value.items()) {
        RT_CHECK(mvalue.is_string(), src, ": __metadata__ value of \"", mkey, "\" is ", to_json(mvalue).substr(0, 80),
                 ", expected a string");
        file.metadata.emplace_back(mkey, mvalue.get<std::string>());
      }
      continue;
    }
    entries.push_back(parse_entry(src, key, value, buffer.size()));
  }

  // The format requires the tensors to tile the buffer exactly: sort by offsets and walk it.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    RT_CHECK(e.begin >= pos, src, ": tensor \"", e.name, "\": data_offsets [", e.begin, ", ", e.end,
             "] overlap tensor \"", previous ? previous->name : "", "\" [", previous ? previous->begin : 0, ", ", pos,
             "]");
    RT_CHECK(e.begin == pos, src, ": tensor \"", e.name, "\": data_offsets [", e.begin, ", ", e.end,
             "] leave a gap of ", e.begin - pos, " bytes after byte ", pos, " of the data buffer");
    pos = e.end;
    previous = &e;
  }
  RT_CHECK(pos == buffer.size(), src, ": the last ", buffer.size() - pos, " bytes of the ", buffer.size(),
           "-byte data buffer belong to no tensor",
           previous ? str_cat(" (the last tensor, \"", previous->name, "\", ends at byte ", pos, ")") : std::string());

  file.tensors.reserve(entries.size());
  for (Entry& e : entries) {
    const auto* first = reinterpret_cast<const uint8_t*>(buffer.data()) + e.begin;
    e.tensor.bytes.assign(first, first + (e.end - e.begin));
    file.tensors.emplace_back(std::move(e.name), std::move(e.tensor));
  }
  return file;
}

StFile read_safetensors(const std::string& path) { return parse_safetensors(read_file(path), path); }

StFile read_safetensors_metadata(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  RT_CHECK(in, "cannot read '", path, "': ", std::strerror(errno));
  unsigned char length[8] = {};
  in.read(reinterpret_cast<char*>(length), 8);
  RT_CHECK(in.gcount() == 8, path, ": not a safetensors file: shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(length[i]) << (8 * i);
  RT_CHECK(n <= kMaxHeaderBytes, path, ": header length ", n, " exceeds the ", kMaxHeaderBytes,
           "-byte limit (not a safetensors file?)");
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  RT_CHECK(static_cast<uint64_t>(in.gcount()) == n, path, ": header length ", n,
           " runs past the end of the file (truncated?)");
  const Json root = parse_json(header, path + " header");
  StFile file;
  if (root.is_object() && root.contains(kMetadataKey) && root[kMetadataKey].is_object())
    for (const auto& [key, value] : root[kMetadataKey].items())
      if (value.is_string()) file.metadata.emplace_back(key, value.get<std::string>());
  return file;
}

StTensor make_f32_tensor(std::vector<int64_t> shape, const float* data) {
  uint64_t bytes = 0;
  RT_CHECK(byte_count(shape, DType::kF32, &bytes), "make_f32_tensor: invalid shape ", shape_text(shape));
  StTensor t;
  t.dtype = DType::kF32;
  t.shape = std::move(shape);
  t.bytes.resize(bytes);
  if (bytes > 0) {
    RT_CHECK(data != nullptr, "make_f32_tensor: null data for shape ", shape_text(t.shape));
    std::memcpy(t.bytes.data(), data, bytes);
  }
  return t;
}

std::vector<float> as_f32(const StTensor& tensor, const std::string& context) {
  const size_t size = dtype_size(tensor.dtype);
  RT_CHECK(tensor.bytes.size() % size == 0, context, ": ", tensor.bytes.size(), " bytes is not a whole number of ",
           dtype_name(tensor.dtype), " elements");
  std::vector<float> out(tensor.bytes.size() / size);
  if (tensor.dtype == DType::kF32) {
    if (!out.empty()) std::memcpy(out.data(), tensor.bytes.data(), tensor.bytes.size());
  } else if (tensor.dtype == DType::kF64) {
    for (size_t i = 0; i < out.size(); ++i) {
      double d;
      std::memcpy(&d, tensor.bytes.data() + i * 8, 8);
      out[i] = static_cast<float>(d);
    }
  } else {
    RT_CHECK(false, context, ": expected an F32 (or F64) tensor, got ", dtype_name(tensor.dtype));
  }
  return out;
}

}  // namespace rt
