// Tests for read_idx, load_idx_dataset and gather_batch. Expected values come from the IDX format
// and from the real Fashion-MNIST files as decoded by Python's gzip module, never from the code
// under test. Real-file tests skip when the Debian dataset-fashion-mnist package is absent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "base/check.h"
#include "data/batch.h"
#include "data/idx.h"
#include "data/labeled_images.h"

namespace rt {
namespace {

namespace fs = std::filesystem;

const std::string kFashionDir = "/usr/share/datasets/fashion-mnist/";
const std::string kTrainImages = kFashionDir + "train-images-idx3-ubyte.gz";
const std::string kTrainLabels = kFashionDir + "train-labels-idx1-ubyte.gz";
const std::string kTestImages = kFashionDir + "t10k-images-idx3-ubyte.gz";
const std::string kTestLabels = kFashionDir + "t10k-labels-idx1-ubyte.gz";

#define SKIP_WITHOUT_FASHION_MNIST()                                                                                \
  do {                                                                                                              \
    if (!fs::exists(kTrainImages) || !fs::exists(kTrainLabels) || !fs::exists(kTestImages) ||                       \
        !fs::exists(kTestLabels))                                                                                   \
      GTEST_SKIP() << "Fashion-MNIST not found under " << kFashionDir << " (Debian package dataset-fashion-mnist)"; \
  } while (0)

using Bytes = std::vector<uint8_t>;

// Writes bytes to a fresh file in the test temp directory and returns its path.
std::string write_temp(const std::string& name, const Bytes& bytes) {
  const fs::path path = fs::path(::testing::TempDir()) / ("rt_idx_test_" + name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(out.good()) << "could not write " << path;
  return path.string();
}

// An IDX header built by hand from the format description: 00 00 type ndims, then big-endian dims.
Bytes idx_header(uint8_t type, const std::vector<uint32_t>& dims) {
  Bytes b = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(d >> shift));
  }
  return b;
}

Bytes ubyte_idx(const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes b = idx_header(0x08, dims);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// Runs fn, expects rt::Error, and checks the message contains every phrase.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& phrases) {
  try {
    fn();
    ADD_FAILURE() << "expected rt::Error containing \"" << phrases.front() << "\"";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : phrases) {
      EXPECT_NE(msg.find(p), std::string::npos) << "message lacks \"" << p << "\": " << msg;
    }
  }
}

// Raw IDX 00 00 08 03 | 2 | 2 | 3 | bytes 0..11, gzip'd by
//   python3 -c "import gzip; print(list(gzip.compress(bytes([0,0,8,3, 0,0,0,2, 0,0,0,2, 0,0,0,3])
//               + bytes(range(12)), mtime=0)))"
const Bytes kSmallIdxGzip = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x63, 0x60, 0xe0, 0x60,
                             0x66, 0x60, 0x60, 0x60, 0x82, 0x62, 0x66, 0x06, 0x46, 0x26, 0x66, 0x16, 0x56, 0x36,
                             0x76, 0x0e, 0x4e, 0x2e, 0x6e, 0x00, 0x78, 0x1e, 0x23, 0x84, 0x1c, 0x00, 0x00, 0x00};

Bytes iota_bytes(size_t n) {
  Bytes b(n);
  std::iota(b.begin(), b.end(), uint8_t{0});
  return b;
}

// ---- real Fashion-MNIST files ----

TEST(ReadIdx, FashionMnistTrainHeadersGive60000ImagesOf28x28) {
  SKIP_WITHOUT_FASHION_MNIST();
  const IdxArray images = read_idx(kTrainImages);
  EXPECT_EQ(images.dims, (std::vector<int64_t>{60000, 28, 28}));
  EXPECT_EQ(images.data.size(), 60000u * 28 * 28);
  const IdxArray labels = read_idx(kTrainLabels);
  EXPECT_EQ(labels.dims, (std::vector<int64_t>{60000}));
  EXPECT_EQ(labels.data.size(), 60000u);
}

TEST(ReadIdx, FashionMnistTestHeadersGive10000ImagesOf28x28) {
  SKIP_WITHOUT_FASHION_MNIST();
  EXPECT_EQ(read_idx(kTestImages).dims, (std::vector<int64_t>{10000, 28, 28}));
  EXPECT_EQ(read_idx(kTestLabels).dims, (std::vector<int64_t>{10000}));
}

TEST(ReadIdx, FashionMnistBytesMatchPythonGzipDecode) {
  SKIP_WITHOUT_FASHION_MNIST();
  // Values from python3 gzip.open(...).read(): labels [8:18], image bytes [16:16+784] summed,
  // row 14 of image 0 (bytes 16+14*28 .. +28), and the test-set image 0 sum.
  const IdxArray labels = read_idx(kTrainLabels);
  EXPECT_EQ(Bytes(labels.data.begin(), labels.data.begin() + 10), (Bytes{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  const IdxArray images = read_idx(kTrainImages);
  EXPECT_EQ(std::accumulate(images.data.begin(), images.data.begin() + 784, int64_t{0}), 76247);
  EXPECT_EQ(std::accumulate(images.data.end() - 784, images.data.end(), int64_t{0}), 16684);
  const Bytes row14(images.data.begin() + 14 * 28, images.data.begin() + 15 * 28);
  EXPECT_EQ(row14, (Bytes{0,   0,   1,   4,   6,   7,   2,   0,   0,   0,   0,   0,   237, 226,
                          217, 223, 222, 219, 222, 221, 216, 223, 229, 215, 218, 255, 77,  0}));
  const IdxArray test_images = read_idx(kTestImages);
  EXPECT_EQ(std::accumulate(test_images.data.begin(), test_images.data.begin() + 784, int64_t{0}), 33456);
}

TEST(LoadIdxDataset, FashionMnistTrainHasTenClassesOf6000Each) {
  SKIP_WITHOUT_FASHION_MNIST();
  const LabeledImages set = load_idx_dataset(kTrainImages, kTrainLabels, {0.0}, {1.0});
  EXPECT_EQ(set.count, 60000);
  EXPECT_EQ(set.channels, 1);
  EXPECT_EQ(set.height, 28);
  EXPECT_EQ(set.width, 28);
  EXPECT_EQ(set.num_classes, 10);
  ASSERT_EQ(set.labels.size(), 60000u);
  std::vector<int64_t> per_class(10, 0);
  for (int32_t l : set.labels) {
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 10);
    ++per_class[l];
  }
  EXPECT_EQ(per_class, std::vector<int64_t>(10, 6000));
  // mean 0, std 1 leaves byte / 255: image 0 sums to 76247 / 255 (sum from Python, see above).
  const double sum0 = std::accumulate(set.pixels.begin(), set.pixels.begin() + 784, 0.0);
  EXPECT_NEAR(sum0, 76247.0 / 255.0, 1e-3);
}

TEST(LoadIdxDataset, FashionMnistTestSetNormalisesWithMeanAndStd) {
  SKIP_WITHOUT_FASHION_MNIST();
  const LabeledImages set = load_idx_dataset(kTestImages, kTestLabels, {0.5}, {0.25});
  EXPECT_EQ(set.count, 10000);
  EXPECT_EQ(set.num_classes, 10);
  EXPECT_EQ((std::vector<int32_t>(set.labels.begin(), set.labels.begin() + 10)),
            (std::vector<int32_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));  // Python gzip decode
  // A 0 byte maps to (0 - 0.5) / 0.25 = -2; the pixel mean of image 0 is 33456 / 784 / 255.
  EXPECT_FLOAT_EQ(set.pixels[0], -2.0f);
  double sum0 = std::accumulate(set.pixels.begin(), set.pixels.begin() + 784, 0.0);
  EXPECT_NEAR(sum0, (33456.0 / 255.0 - 784 * 0.5) / 0.25, 1e-2);
}

// ---- small files written by the tests ----

TEST(ReadIdx, RawFileReadsTheSameAsGzip) {
  const Bytes raw = ubyte_idx({2, 2, 3}, iota_bytes(12));
  const IdxArray from_raw = read_idx(write_temp("small_raw.idx", raw));
  const IdxArray from_gzip = read_idx(write_temp("small.idx.gz", kSmallIdxGzip));
  EXPECT_EQ(from_raw.dims, (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(from_raw.data, iota_bytes(12));
  EXPECT_EQ(from_gzip.dims, from_raw.dims);
  EXPECT_EQ(from_gzip.data, from_raw.data);
}

TEST(ReadIdx, ReadsOneAndFourDimensionalArrays) {
  EXPECT_EQ(read_idx(write_temp("one_dim.idx", ubyte_idx({5}, {3, 1, 4, 1, 5}))).data, (Bytes{3, 1, 4, 1, 5}));
  EXPECT_EQ(read_idx(write_temp("four_dim.idx", ubyte_idx({1, 2, 1, 3}, iota_bytes(6)))).dims,
            (std::vector<int64_t>{1, 2, 1, 3}));
}

TEST(ReadIdx, MissingFileErrorNamesPathAndReason) {
  const std::string path = (fs::path(::testing::TempDir()) / "rt_idx_test_no_such_file.gz").string();
  expect_error([&] { read_idx(path); }, {path, "No such file or directory"});
}

TEST(ReadIdx, TruncatedPayloadSaysExpectedAndFoundBytes) {
  Bytes b = ubyte_idx({4, 5}, iota_bytes(20));
  b.resize(b.size() - 7);  // 13 of 20 payload bytes left
  const std::string path = write_temp("truncated.idx", b);
  expect_error([&] { read_idx(path); }, {path, "truncated", "need 20 payload bytes", "found 13"});
}

TEST(ReadIdx, TruncatedHeaderIsRejected) {
  const Bytes b = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0};  // 3 dims promised, 1.5 given
  const std::string path = write_temp("short_header.idx", b);
  expect_error([&] { read_idx(path); }, {path, "truncated IDX header", "expected 12", "found 6"});
  const std::string tiny = write_temp("tiny.idx", {0, 0});
  expect_error([&] { read_idx(tiny); }, {tiny, "too short for an IDX header"});
}

TEST(ReadIdx, TruncatedGzipStreamIsRejected) {
  // Cut inside the compressed data: the payload comes up short.
  const Bytes cut(kSmallIdxGzip.begin(), kSmallIdxGzip.end() - 12);
  const std::string path = write_temp("cut.idx.gz", cut);
  expect_error([&] { read_idx(path); }, {path, "truncated", "need 12 payload bytes", "cut short"});
  // Cut only the 8-byte CRC/size trailer: the payload is complete but the stream is not.
  const Bytes no_trailer(kSmallIdxGzip.begin(), kSmallIdxGzip.end() - 8);
  const std::string path2 = write_temp("no_trailer.idx.gz", no_trailer);
  expect_error([&] { read_idx(path2); }, {path2, "gzip stream ends early", "cut short"});
}

TEST(ReadIdx, CorruptGzipChecksumIsRejected) {
  Bytes bad = kSmallIdxGzip;
  bad[bad.size() - 8] ^= 0xff;  // first byte of the CRC-32 trailer
  const std::string path = write_temp("bad_crc.idx.gz", bad);
  expect_error([&] { read_idx(path); }, {path, "corrupt gzip stream: incorrect data check"});
}

TEST(ReadIdx, WrongMagicIsRejectedWithTheValueFound) {
  Bytes b = ubyte_idx({3}, {1, 2, 3});
  b[0] = 0x01;
  const std::string path = write_temp("bad_magic.idx", b);
  expect_error([&] { read_idx(path); }, {path, "bad magic 0x01000801", "0x00000803 (images)", "not an IDX file"});
}

TEST(ReadIdx, NonByteElementTypeIsRejected) {
  Bytes b = idx_header(0x0D, {2});  // float32
  b.resize(b.size() + 8);
  const std::string path = write_temp("float.idx", b);
  expect_error([&] { read_idx(path); }, {path, "bad magic 0x00000D01", "type 0x0D (float32) is not supported"});
}

TEST(ReadIdx, DimensionCountOutsideOneToFourIsRejected) {
  const std::string zero = write_temp("zero_dims.idx", idx_header(0x08, {}));
  expect_error([&] { read_idx(zero); }, {zero, "bad magic 0x00000800", "0 dimensions is not supported"});
  const std::string five = write_temp("five_dims.idx", ubyte_idx({1, 1, 1, 1, 1}, {7}));
  expect_error([&] { read_idx(five); }, {five, "bad magic 0x00000805", "5 dimensions is not supported"});
}

TEST(ReadIdx, ZeroSizedDimensionIsRejected) {
  const std::string path = write_temp("zero_dim.idx", ubyte_idx({3, 0}, {}));
  expect_error([&] { read_idx(path); }, {path, "dimension 1 is 0", "> 0"});
}

TEST(ReadIdx, TrailingBytesAreRejected) {
  Bytes b = ubyte_idx({2, 3}, iota_bytes(6));
  b.insert(b.end(), {0xde, 0xad, 0xbe});
  const std::string path = write_temp("trailing.idx", b);
  expect_error([&] { read_idx(path); }, {path, "3 trailing bytes", "expected 6 payload bytes"});
}

TEST(ReadIdx, HugeDimensionsFailAsTruncationWithoutAllocatingThem) {
  // 4 x 0xFFFFFFFF would be 2^34 bytes; the file holds 10.
  const std::string path = write_temp("huge.idx", ubyte_idx({4, 0xFFFFFFFFu}, iota_bytes(10)));
  expect_error([&] { read_idx(path); }, {path, "truncated", "found 10"});
}

TEST(LoadIdxDataset, NormalisesSmallFilesAndCountsClasses) {
  const std::string images = write_temp("ds_images.idx", ubyte_idx({2, 1, 3}, {0, 51, 255, 102, 0, 0}));
  const std::string labels = write_temp("ds_labels.idx", ubyte_idx({2}, {4, 1}));
  const LabeledImages set = load_idx_dataset(images, labels, {0.2}, {0.5});
  EXPECT_EQ(set.count, 2);
  EXPECT_EQ(set.height, 1);
  EXPECT_EQ(set.width, 3);
  EXPECT_EQ(set.num_classes, 5);
  EXPECT_EQ(set.labels, (std::vector<int32_t>{4, 1}));
  // (b / 255 - 0.2) / 0.5 for b = 0, 51, 255, 102: -0.4, 0, 1.6, 0.4.
  const std::vector<float> expected = {-0.4f, 0.0f, 1.6f, 0.4f, -0.4f, -0.4f};
  ASSERT_EQ(set.pixels.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(set.pixels[i], expected[i], 1e-6) << i;
}

TEST(LoadIdxDataset, CountMismatchNamesBothFilesAndCounts) {
  const std::string images = write_temp("mm_images.idx", ubyte_idx({3, 2, 2}, iota_bytes(12)));
  const std::string labels = write_temp("mm_labels.idx", ubyte_idx({2}, {0, 1}));
  expect_error([&] { load_idx_dataset(images, labels, {0.0}, {1.0}); }, {images, labels, "3 images", "2 labels"});
}

TEST(LoadIdxDataset, ImagesMustBeThreeDimensionalAndLabelsOneDimensional) {
  const std::string flat = write_temp("flat_images.idx", ubyte_idx({2, 4}, iota_bytes(8)));
  const std::string images = write_temp("ok_images.idx", ubyte_idx({2, 2, 2}, iota_bytes(8)));
  const std::string labels = write_temp("ok_labels.idx", ubyte_idx({2}, {0, 1}));
  const std::string labels2d = write_temp("labels_2d.idx", ubyte_idx({2, 1}, {0, 1}));
  expect_error([&] { load_idx_dataset(flat, labels, {0.0}, {1.0}); }, {flat, "expected 3 (N, H, W)"});
  expect_error([&] { load_idx_dataset(images, labels2d, {0.0}, {1.0}); }, {labels2d, "expected 1 (N)"});
}

TEST(LoadIdxDataset, RejectsWrongMeanStdLengthAndNonPositiveStd) {
  const std::string images = write_temp("ms_images.idx", ubyte_idx({1, 1, 1}, {9}));
  const std::string labels = write_temp("ms_labels.idx", ubyte_idx({1}, {0}));
  expect_error(
      [&] {
        load_idx_dataset(images, labels, {0.1, 0.2}, {1.0, 1.0});
      },
      {"one mean and one std per channel", "got 2 means"});
  expect_error([&] { load_idx_dataset(images, labels, {0.1}, {0.0}); }, {"std > 0"});
}

TEST(GatherBatch, CopiesSelectedSamplesInIndexOrder) {
  LabeledImages set;
  set.count = 3;
  set.height = 1;
  set.width = 2;
  set.pixels = {0.f, 1.f, 10.f, 11.f, 20.f, 21.f};
  set.labels = {7, 8, 9};
  const std::vector<int64_t> indices = {2, 0, 2};
  std::vector<float> images(6, -1.f);
  std::vector<int32_t> labels(3, -1);
  gather_batch(set, indices, images.data(), labels.data());
  EXPECT_EQ(images, (std::vector<float>{20.f, 21.f, 0.f, 1.f, 20.f, 21.f}));
  EXPECT_EQ(labels, (std::vector<int32_t>{9, 7, 9}));
}

TEST(GatherBatch, OutOfRangeIndexIsRejected) {
  LabeledImages set;
  set.count = 2;
  set.height = set.width = 1;
  set.pixels = {0.f, 1.f};
  set.labels = {0, 1};
  float image = 0;
  int32_t label = 0;
  const std::vector<int64_t> bad = {2};
  expect_error([&] { gather_batch(set, bad, &image, &label); }, {"index 2", "2 samples"});
}

}  // namespace
}  // namespace rt
