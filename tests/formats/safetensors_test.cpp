// Tests for formats/safetensors.h. Interop is checked against an independent reader and writer of the
// format, a few lines of Python (struct + json) run with /usr/bin/python3; every malformed-file
// error is checked on a hand-built byte fixture for naming the file and the tensor.
#include "formats/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "formats/atomic_file.h"
#include "base/check.h"
#include "tests/support/error_of.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/python_probe.h"

namespace rt {
namespace {

using rt::testing::kPython;

using rt::testing::error_of;
using rt::testing::ScratchDir;

template <typename T>
StTensor make_tensor(DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  StTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

// The 8-byte little-endian length, the header text as given (no padding added), the buffer.
std::string st_bytes(std::string_view header, std::string_view buffer) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  out += header;
  out += buffer;
  return out;
}

// Writes `bytes` as dir/file, reads it back and returns the error message ("" if it read fine).
std::string read_error(const ScratchDir& dir, const std::string& file, const std::string& bytes) {
  write_file_atomically(dir / file, bytes);
  return error_of([&] { read_safetensors(dir / file); });
}

void expect_contains(const std::string& msg, std::initializer_list<std::string> parts) {
  EXPECT_NE(msg, "") << "no error was raised";
  for (const std::string& part : parts)
    EXPECT_NE(msg.find(part), std::string::npos) << "missing '" << part << "' in: " << msg;
}

// Runs `script` with /usr/bin/python3 and the given arguments; returns stdout and stderr together.
std::string run_python(const ScratchDir& dir, const std::string& script, const std::string& args, int* status) {
  write_file_atomically(dir / "script.py", script);
  const std::string cmd = std::string(kPython) + " " + (dir / "script.py") + " " + args + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  RT_ASSERT(pipe != nullptr);
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  *status = ::pclose(pipe);
  return out;
}

StFile sample_file() {
  StFile f;
  f.metadata = {{"format", "pt"}, {"step", "1200"}, {"note", "quote \" and \\ and \xc3\xbc"}};
  const float w[] = {0.5f, -1.25f, 3.0f, 0.0f, -0.0f, 1024.0f};
  f.tensors.emplace_back("conv1.weight", make_f32_tensor({2, 1, 3}, w));
  f.tensors.emplace_back("bn1.num_batches_tracked", make_tensor<int64_t>(DType::kI64, {}, {int64_t{1} << 40}));
  f.tensors.emplace_back("bn1.running_var", make_tensor<double>(DType::kF64, {2}, {0.25, -8.5}));
  f.tensors.emplace_back("empty", make_f32_tensor({0, 4}, nullptr));
  f.tensors.emplace_back("mask", make_tensor<uint8_t>(DType::kBool, {3}, {1, 0, 1}));
  f.tensors.emplace_back("fc.bias", make_tensor<int32_t>(DType::kI32, {1, 2}, {-7, 2147483647}));
  return f;
}

TEST(Safetensors, RoundTripsTensorsAndMetadataInOrder) {
  ScratchDir dir;
  const StFile f = sample_file();
  write_safetensors(dir / "m.safetensors", f);
  const StFile back = read_safetensors(dir / "m.safetensors");
  EXPECT_EQ(back.metadata, f.metadata);
  ASSERT_EQ(back.tensors.size(), f.tensors.size());
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    EXPECT_EQ(back.tensors[i].first, f.tensors[i].first);
    EXPECT_EQ(back.tensors[i].second.dtype, f.tensors[i].second.dtype) << f.tensors[i].first;
    EXPECT_EQ(back.tensors[i].second.shape, f.tensors[i].second.shape) << f.tensors[i].first;
    EXPECT_EQ(back.tensors[i].second.bytes, f.tensors[i].second.bytes) << f.tensors[i].first;
  }
  EXPECT_EQ(back.meta("step"), "1200");
  EXPECT_EQ(back.meta("absent"), "");
  ASSERT_NE(back.find("bn1.running_var"), nullptr);
  EXPECT_EQ(back.find("absent"), nullptr);
  EXPECT_EQ(as_f32(*back.find("conv1.weight"), "conv1.weight"),
            (std::vector<float>{0.5f, -1.25f, 3.0f, 0.0f, -0.0f, 1024.0f}));
  EXPECT_EQ(as_f32(*back.find("bn1.running_var"), "bn1.running_var"), (std::vector<float>{0.25f, -8.5f}));
}

TEST(Safetensors, PadsTheHeaderWithSpacesToAMultipleOfEight) {
  for (const std::string name : {"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh"}) {
    StFile f;
    const float x = 1.0f;
    f.tensors.emplace_back(name, make_f32_tensor({1}, &x));
    const std::string bytes = serialize_safetensors(f);
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ(n % 8, 0u) << name;
    EXPECT_EQ(bytes.size(), 8 + n + 4) << name;
    const std::string header = bytes.substr(8, n);
    EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
              "{\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}");
  }
  EXPECT_EQ(serialize_safetensors(StFile{}), st_bytes("{}      ", ""));
}

TEST(Safetensors, AsF32RejectsOtherDtypesNamingTheContext) {
  const StTensor t = make_tensor<int64_t>(DType::kI64, {1}, {3});
  expect_contains(error_of([&] { as_f32(t, "ckpt.safetensors: bn1.num_batches_tracked"); }),
                  {"ckpt.safetensors: bn1.num_batches_tracked", "I64"});
}

TEST(Safetensors, WriterRejectsInconsistentTensorsNamingThem) {
  ScratchDir dir;
  StFile f;
  StTensor bad = make_f32_tensor({2, 2}, std::vector<float>(4).data());
  bad.bytes.pop_back();
  f.tensors.emplace_back("layer1.0.conv1.weight", bad);
  expect_contains(error_of([&] { write_safetensors(dir / "w.safetensors", f); }),
                  {"w.safetensors", "layer1.0.conv1.weight", "needs 16 bytes"});
  EXPECT_FALSE(std::filesystem::exists(dir / "w.safetensors"));

  StFile dup;
  const float x = 1.0f;
  dup.tensors.emplace_back("fc.weight", make_f32_tensor({1}, &x));
  dup.tensors.emplace_back("fc.weight", make_f32_tensor({1}, &x));
  expect_contains(error_of([&] { write_safetensors(dir / "d.safetensors", dup); }),
                  {"d.safetensors", "fc.weight", "twice"});

  StFile meta_twice;
  meta_twice.metadata = {{"epoch", "1"}, {"epoch", "2"}};
  expect_contains(error_of([&] { write_safetensors(dir / "m.safetensors", meta_twice); }),
                  {"m.safetensors", "\"epoch\"", "twice"});

  StFile reserved;
  reserved.tensors.emplace_back("__metadata__", make_f32_tensor({1}, &x));
  expect_contains(error_of([&] { serialize_safetensors(reserved); }), {"__metadata__", "reserved"});
}

// (a) An independent reader (Python struct + json) reads what our writer wrote.
TEST(Safetensors, PythonReaderReadsOurFile) {
  if (::access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " not found; interop with Python not checked";
  ScratchDir dir;
  write_safetensors(dir / "ours.safetensors", sample_file());
  const std::string script = R"PY(
import json, struct, sys
data = open(sys.argv[1], 'rb').read()
(n,) = struct.unpack('<Q', data[:8])
header = json.loads(data[8:8 + n].decode('utf-8'))
buf = data[8 + n:]
meta = header.pop('__metadata__', {})
spans = sorted(tuple(v['data_offsets']) for v in header.values())
pos = 0
for b, e in spans:
    assert b == pos, (b, pos)
    pos = e
assert pos == len(buf), (pos, len(buf))
fmt = {'F32': 'f', 'F64': 'd', 'I64': 'q', 'I32': 'i', 'BOOL': '?'}
for k, v in meta.items():
    print('meta', k, ascii(v))
for name, v in header.items():
    b, e = v['data_offsets']
    f = fmt[v['dtype']]
    vals = struct.unpack('<%d%s' % ((e - b) // struct.calcsize(f), f), buf[b:e])
    print(name, v['dtype'], v['shape'], *vals)
)PY";
  int status = 0;
  const std::string out = run_python(dir, script, dir / "ours.safetensors", &status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(out,
            "meta format 'pt'\n"
            "meta step '1200'\n"
            "meta note 'quote \" and \\\\ and \\xfc'\n"
            "conv1.weight F32 [2, 1, 3] 0.5 -1.25 3.0 0.0 -0.0 1024.0\n"
            "bn1.num_batches_tracked I64 [] 1099511627776\n"
            "bn1.running_var F64 [2] 0.25 -8.5\n"
            "empty F32 [0, 4]\n"
            "mask BOOL [3] True False True\n"
            "fc.bias I32 [1, 2] -7 2147483647\n");
}

// (b) Our reader reads a file from an independent writer: header keys sorted (so not in data
// order), Python's default ", " / ": " spacing, no padding, dtypes we only pass through.
TEST(Safetensors, ReadsAFileWrittenByPython) {
  if (::access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " not found; interop with Python not checked";
  ScratchDir dir;
  const std::string script = R"PY(
import json, struct, sys
tensors = [
    ('z.bias', 'F32', [3], struct.pack('<3f', 1.5, -2.0, 0.25)),
    ('a.weight', 'F64', [2, 2], struct.pack('<4d', 1, 2, 3, 4.5)),
    ('steps', 'I64', [], struct.pack('<q', -2**40)),
    ('mask', 'BOOL', [4], bytes([1, 0, 0, 1])),
    ('empty', 'F32', [0, 3], b''),
    ('pixels', 'U8', [2], bytes([0, 255])),
    ('half', 'F16', [2], struct.pack('<2e', 1.0, -0.5)),
]
header = {'__metadata__': {'format': 'pt', 'epoch': '7'}}
buf = b''
for name, dtype, shape, raw in tensors:
    header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(buf), len(buf) + len(raw)]}
    buf += raw
h = json.dumps(header, sort_keys=True).encode('utf-8')
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + buf)
)PY";
  int status = 0;
  const std::string out = run_python(dir, script, dir / "py.safetensors", &status);
  ASSERT_EQ(status, 0) << out;

  const StFile f = read_safetensors(dir / "py.safetensors");
  EXPECT_EQ(f.meta("format"), "pt");
  EXPECT_EQ(f.meta("epoch"), "7");
  std::vector<std::string> names;
  for (const auto& [name, t] : f.tensors) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"z.bias", "a.weight", "steps", "mask", "empty", "pixels", "half"}));

  EXPECT_EQ(as_f32(*f.find("z.bias"), "z.bias"), (std::vector<float>{1.5f, -2.0f, 0.25f}));
  EXPECT_EQ(f.find("a.weight")->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(as_f32(*f.find("a.weight"), "a.weight"), (std::vector<float>{1.0f, 2.0f, 3.0f, 4.5f}));
  const StTensor& steps = *f.find("steps");
  EXPECT_EQ(steps.dtype, DType::kI64);
  EXPECT_TRUE(steps.shape.empty());
  int64_t s = 0;
  ASSERT_EQ(steps.bytes.size(), 8u);
  std::memcpy(&s, steps.bytes.data(), 8);
  EXPECT_EQ(s, -(int64_t{1} << 40));
  EXPECT_EQ(f.find("mask")->bytes, (std::vector<uint8_t>{1, 0, 0, 1}));
  EXPECT_EQ(f.find("empty")->shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(f.find("empty")->bytes.empty());
  EXPECT_EQ(f.find("pixels")->dtype, DType::kU8);
  EXPECT_EQ(f.find("pixels")->bytes, (std::vector<uint8_t>{0, 255}));
  EXPECT_EQ(f.find("half")->dtype, DType::kF16);
  EXPECT_EQ(f.find("half")->bytes, (std::vector<uint8_t>{0x00, 0x3c, 0x00, 0xb8}));  // 1.0, -0.5 in IEEE half
  expect_contains(error_of([&] { as_f32(*f.find("half"), "py.safetensors: half"); }), {"py.safetensors: half", "F16"});
}

// ---- Malformed files: each error names the file and, where one is involved, the tensor. ----

const std::string kF32x2 = std::string(8, '\0');  // two zero floats

TEST(Safetensors, FileShorterThanEightBytesNamesTheFile) {
  ScratchDir dir;
  expect_contains(read_error(dir, "tiny.safetensors", std::string("\x10\0\0\0\0", 5)),
                  {"tiny.safetensors", "shorter than"});
  expect_contains(read_error(dir, "nothing.safetensors", ""), {"nothing.safetensors", "0 bytes"});
}

TEST(Safetensors, HeaderLengthBeyondTheFileNamesTheFile) {
  ScratchDir dir;
  std::string bytes = st_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", kF32x2);
  bytes[0] = static_cast<char>(200);
  expect_contains(read_error(dir, "long.safetensors", bytes), {"long.safetensors", "header length 200", "runs past"});
}

TEST(Safetensors, AbsurdHeaderLengthNamesTheFile) {
  ScratchDir dir;
  std::string bytes = st_bytes("{}", "");
  bytes[5] = 1;  // 2^40
  expect_contains(read_error(dir, "huge.safetensors", bytes), {"huge.safetensors", "exceeds", "limit"});
}

TEST(Safetensors, MalformedHeaderJsonNamesTheFileAndByte) {
  ScratchDir dir;
  expect_contains(read_error(dir, "bad.safetensors", st_bytes(R"({"w":{"dtype":"F32",})", "")),
                  {"bad.safetensors", "invalid JSON at byte 20"});
  expect_contains(read_error(dir, "arr.safetensors", st_bytes("[1,2]", "")),
                  {"arr.safetensors", "expected a JSON object"});
}

// A number no double holds is refused by the JSON library itself, which says nothing of where:
// the error names the file and the number's byte all the same.
TEST(Safetensors, NumberBeyondADoubleNamesTheFileAndByte) {
  ScratchDir dir;
  const std::string header = R"({"conv.weight":{"dtype":"F32","shape":[6,1,5,5e999],"data_offsets":[0,8]}})";
  const std::string msg = read_error(dir, "overflow.safetensors", st_bytes(header, kF32x2));
  expect_contains(msg, {"overflow.safetensors", "invalid JSON at byte 45", "number overflow parsing '5e999'"});
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
  expect_contains(error_of([&] { read_safetensors_metadata(dir / "overflow.safetensors"); }),
                  {"overflow.safetensors", "number overflow"});
}

TEST(Safetensors, UnknownDtypeNamesTheTensor) {
  ScratchDir dir;
  expect_contains(read_error(dir, "dt.safetensors",
                             st_bytes(R"({"fc.weight":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", kF32x2)),
                  {"dt.safetensors", "fc.weight", "unknown dtype \"Q4\""});
}

TEST(Safetensors, ShapeThatIsNotAListOfNonNegativeIntegersNamesTheTensor) {
  ScratchDir dir;
  for (const char* shape : {"2", "[-2]", "[1.5]", "[\"2\"]", "null"}) {
    const std::string header =
        std::string(R"({"fc.weight":{"dtype":"F32","shape":)") + shape + R"(,"data_offsets":[0,8]}})";
    expect_contains(read_error(dir, "shape.safetensors", st_bytes(header, kF32x2)),
                    {"shape.safetensors", "fc.weight", "not a list of non-negative integers"});
  }
}

TEST(Safetensors, DataOffsetsThatAreNotAPairNamesTheTensor) {
  ScratchDir dir;
  for (const char* offsets : {"[0]", "[0,4,8]", "[\"0\",\"8\"]", "[8,0]", "[-1,7]", "8", "[0,8.5]"}) {
    const std::string header = std::string(R"({"fc.bias":{"dtype":"F32","shape":[2],"data_offsets":)") + offsets + "}}";
    expect_contains(read_error(dir, "offsets.safetensors", st_bytes(header, kF32x2)),
                    {"offsets.safetensors", "fc.bias", "not [begin, end]"});
  }
}

TEST(Safetensors, MissingOrUnknownFieldsNameTheTensor) {
  ScratchDir dir;
  expect_contains(read_error(dir, "f.safetensors", st_bytes(R"({"w":{"dtype":"F32","shape":[2]}})", kF32x2)),
                  {"f.safetensors", "\"w\"", "missing \"data_offsets\""});
  expect_contains(
      read_error(dir, "f.safetensors",
                 st_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"strides":[1]}})", kF32x2)),
      {"f.safetensors", "\"w\"", "unknown field \"strides\""});
  expect_contains(read_error(dir, "f.safetensors", st_bytes(R"({"w":[1,2]})", "")),
                  {"f.safetensors", "\"w\"", "expected an object"});
}

TEST(Safetensors, ByteCountThatDisagreesWithShapeNamesTheTensor) {
  ScratchDir dir;
  expect_contains(read_error(dir, "count.safetensors",
                             st_bytes(R"({"bn.weight":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", kF32x2)),
                  {"count.safetensors", "bn.weight", "span 8 bytes", "needs 12"});
  // A shape whose byte count overflows 64 bits is reported, not wrapped around.
  expect_contains(
      read_error(
          dir, "count.safetensors",
          st_bytes(R"({"bn.weight":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", kF32x2)),
      {"count.safetensors", "bn.weight", "more than 2^64"});
}

TEST(Safetensors, TruncatedFileNamesTheTensor) {
  ScratchDir dir;
  StFile f;
  const std::vector<float> a(4, 1.0f), b(6, 2.0f);
  f.tensors.emplace_back("layer1.weight", make_f32_tensor({4}, a.data()));
  f.tensors.emplace_back("layer2.weight", make_f32_tensor({2, 3}, b.data()));
  std::string bytes = serialize_safetensors(f);
  bytes.resize(bytes.size() - 5);
  expect_contains(read_error(dir, "cut.safetensors", bytes),
                  {"cut.safetensors", "layer2.weight", "reach past the end", "truncated"});
}

TEST(Safetensors, OverlappingTensorsNameBoth) {
  ScratchDir dir;
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  expect_contains(read_error(dir, "overlap.safetensors", st_bytes(header, std::string(12, '\0'))),
                  {"overlap.safetensors", "tensor \"b\"", "overlap tensor \"a\""});
}

TEST(Safetensors, GapBetweenTensorsNamesTheTensorAfterIt) {
  ScratchDir dir;
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})";
  expect_contains(read_error(dir, "gap.safetensors", st_bytes(header, std::string(20, '\0'))),
                  {"gap.safetensors", "tensor \"b\"", "gap of 4 bytes"});
  // A gap before the first tensor too.
  expect_contains(
      read_error(dir, "gap.safetensors",
                 st_bytes(R"({"c":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", std::string(2, '\0'))),
      {"gap.safetensors", "tensor \"c\"", "gap of 1 bytes"});
}

TEST(Safetensors, TrailingBytesThatNoTensorCoversNameTheFile) {
  ScratchDir dir;
  expect_contains(
      read_error(dir, "tail.safetensors",
                 st_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::string(12, '\0'))),
      {"tail.safetensors", "last 4 bytes", "belong to no tensor", "\"a\""});
  expect_contains(read_error(dir, "tail.safetensors", st_bytes("{}", "xyz")), {"tail.safetensors", "last 3 bytes"});
}

TEST(Safetensors, DuplicateTensorNamesNameTheTensor) {
  ScratchDir dir;
  const std::string header = R"({"fc.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("fc.weight":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  expect_contains(read_error(dir, "dup.safetensors", st_bytes(header, kF32x2)),
                  {"dup.safetensors", "duplicate key \"fc.weight\""});
}

TEST(Safetensors, MetadataValuesThatAreNotStringsNameTheKey) {
  ScratchDir dir;
  expect_contains(read_error(dir, "meta.safetensors", st_bytes(R"({"__metadata__":{"format":"pt","epoch":3}})", "")),
                  {"meta.safetensors", "__metadata__", "\"epoch\"", "expected a string"});
  expect_contains(read_error(dir, "meta.safetensors", st_bytes(R"({"__metadata__":["pt"]})", "")),
                  {"meta.safetensors", "__metadata__", "expected an object"});
}

TEST(Safetensors, AcceptsHeaderPaddingAndZeroSizedTensorsAnywhere) {
  ScratchDir dir;
  const std::string header = R"({"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                             R"("a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"I32","shape":[1],"data_offsets":[4,8]}}   )";
  write_file_atomically(dir / "ok.safetensors", st_bytes(header, kF32x2));
  const StFile f = read_safetensors(dir / "ok.safetensors");
  ASSERT_EQ(f.tensors.size(), 3u);
  EXPECT_EQ(f.tensors[0].first, "a");
  EXPECT_EQ(f.tensors[1].first, "e");
  EXPECT_EQ(f.tensors[2].first, "b");
}

}  // namespace
}  // namespace rt
