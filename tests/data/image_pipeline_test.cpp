// The image pipeline's pieces: decoding against Pillow (tests/data/pillow_oracle.py writes the
// images and Pillow's pixels), transforms against torchvision on the same pixels and crop boxes,
// crop-box statistics, bad files, and the folder index with its cache.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/check.h"
#include "data/image_decode.h"
#include "data/labeled_images.h"
#include "data/image_folder.h"
#include "data/image_transforms.h"
#include "tests/data/test_folders.h"
#include "tests/support/python_probe.h"

namespace fs = std::filesystem;

namespace rt {
namespace {

using testing::fresh_dir;

RgbImage read_rgb(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  RgbImage img;
  in >> img.width >> img.height;
  in.get();
  img.pixels.resize(static_cast<size_t>(img.width) * img.height * 3);
  in.read(reinterpret_cast<char*>(img.pixels.data()), static_cast<std::streamsize>(img.pixels.size()));
  RT_CHECK(in.good(), "short file ", path.string());
  return img;
}

struct Diff {
  int max = 0;
  double mean = 0;
};
Diff compare(const RgbImage& a, const RgbImage& b) {
  Diff d;
  for (size_t i = 0; i < a.pixels.size(); ++i) {
    const int e = std::abs(int{a.pixels[i]} - int{b.pixels[i]});
    d.max = std::max(d.max, e);
    d.mean += e;
  }
  d.mean /= static_cast<double>(std::max<size_t>(1, a.pixels.size()));
  return d;
}

// One run of the oracle for the whole suite.
const fs::path& oracle_dir() {
  static const fs::path dir = [] {
    const fs::path d = fresh_dir("oracle");
    const std::string cmd =
        std::string(testing::kPython) + " " RT_SOURCE_DIR "/tests/data/pillow_oracle.py " + d.string();
    RT_CHECK(std::system(cmd.c_str()) == 0, "pillow_oracle.py failed");
    return d;
  }();
  return dir;
}

std::vector<std::vector<std::string>> manifest(const std::string& kind) {
  std::ifstream in(oracle_dir() / "manifest.txt");
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::istringstream s(line);
    std::vector<std::string> row;
    for (std::string w; s >> w;) row.push_back(w);
    if (!row.empty() && row[0] == kind) rows.push_back(row);
  }
  return rows;
}

// JPEGs too must match exactly: ringtrain decodes them with libjpeg-turbo at Pillow's settings
// (Note [JPEG decoder]), and Debian's Pillow links the same library. (With stb_image's own JPEG
// decoder the oracle's q90 photograph-like image differed by up to 3 levels, mean 0.08.)
// Our decoding of `path` equals Pillow's, saved by the oracle as `pillow_rgb`, pixel for pixel.
void expect_decodes_as_pillow(const std::string& path, const std::string& pillow_rgb, const std::string& name) {
  const RgbImage ours = read_image(path);
  const RgbImage pillow = read_rgb(oracle_dir() / pillow_rgb);
  ASSERT_EQ(ours.width, pillow.width) << path;
  ASSERT_EQ(ours.height, pillow.height) << path;
  const Diff d = compare(ours, pillow);
  std::cout << name << ": max difference " << d.max << ", mean " << d.mean << "\n";
  EXPECT_EQ(d.max, 0) << path;
}

TEST(ImageDecode, EveryFormatAndModeMatchesPillow) {
  if (const std::string& why = testing::python_unavailable("numpy, PIL, torchvision"); !why.empty())
    GTEST_SKIP() << why;
  const auto rows = manifest("decode");
  ASSERT_GE(rows.size(), 12u);
  for (const auto& row : rows) expect_decodes_as_pillow((oracle_dir() / row[2]).string(), row[3], row[1]);
}

// The photographs and scans Debian's python3-skimage and python3-sklearn ship (palette, gray,
// RGBA and photographic files among them), where those packages are installed.
TEST(ImageDecode, DebianSamplePhotosMatchPillow) {
  if (const std::string& why = testing::python_unavailable("numpy, PIL, torchvision"); !why.empty())
    GTEST_SKIP() << why;
  const auto rows = manifest("photo");
  if (rows.empty()) GTEST_SKIP() << "python3-skimage and python3-sklearn are not installed: no sample photos to decode";
  for (const auto& row : rows) expect_decodes_as_pillow(row[2], row[3], row[1]);
}

TEST(ImageDecode, ContentDecidesNotTheExtension) {
  if (const std::string& why = testing::python_unavailable("numpy, PIL, torchvision"); !why.empty())
    GTEST_SKIP() << why;
  const fs::path dir = fresh_dir("misnamed");
  fs::copy_file(oracle_dir() / "photo.jpg", dir / "photo.png");
  const RgbImage a = read_image((dir / "photo.png").string()), b = read_image((oracle_dir() / "photo.jpg").string());
  EXPECT_EQ(a.pixels, b.pixels);
  fs::remove_all(dir);
}

TEST(ImageDecode, BadFilesAreRefusedNamingTheFile) {
  const fs::path dir = fresh_dir("bad");
  std::ofstream(dir / "empty.jpg").close();
  std::ofstream(dir / "text.png") << "not an image at all\n";
  std::ofstream(dir / "truncated.png", std::ios::binary) << std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
  for (const char* name : {"empty.jpg", "text.png", "truncated.png", "missing.jpg"}) {
    const std::string path = (dir / name).string();
    try {
      read_image(path);
      ADD_FAILURE() << name << " was decoded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

// Headers that declare W x H pixels and hold almost nothing else, as a decompression bomb does.
std::string be16(int v) { return {static_cast<char>(v >> 8), static_cast<char>(v & 255)}; }
std::string le16(int v) { return {static_cast<char>(v & 255), static_cast<char>(v >> 8)}; }
std::string be32(uint32_t v) { return be16(static_cast<int>(v >> 16)) + be16(static_cast<int>(v & 0xFFFF)); }
std::string gif_declaring(int w, int h) {
  // Logical screen W x H, no colour table, then one frame as large, and a few bytes of "data".
  return std::string("GIF89a") + le16(w) + le16(h) + std::string("\0\0\0", 3) + "," + le16(0) + le16(0) + le16(w) +
         le16(h) + std::string("\0\x08\x02\x4c\x01\0;", 7);
}
std::string png_declaring(uint32_t w, uint32_t h) {
  return std::string("\x89PNG\r\n\x1a\n", 8) + be32(13) + "IHDR" + be32(w) + be32(h) +
         std::string("\x08\x02\0\0\0", 5) + be32(0) + be32(0) + "IDAT" + be32(0) + be32(0) + "IEND" + be32(0);
}
std::string jpeg_declaring(int w, int h) {
  return std::string("\xFF\xD8\xFF\xDB\x00\x43\x00", 7) + std::string(64, '\x01') +
         std::string("\xFF\xC0\x00\x0B\x08", 5) + be16(h) + be16(w) +
         std::string("\x01\x01\x11\x00\xFF\xDA\x00\x08\x01\x01\x00\x00\x3F\x00", 14) + std::string(16, '\x55') +
         std::string("\xFF\xD9", 2);
}

// Found by the decode fuzz target (tests/data/fuzz/): fill bytes before the JPEG marker are no JPEG to
// libjpeg-turbo, so the file went to stb_image, whose own JPEG decoder wrote past a Huffman
// table. JPEGs are libjpeg-turbo's alone now: the file is refused as no known image.
TEST(ImageDecode, AJpegBehindFillBytesIsRefusedAsNoKnownImage) {
  const std::string bytes = std::string(8, '\xFF') + jpeg_declaring(16, 16);
  try {
    decode_image(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "fill.jpg");
    ADD_FAILURE() << "decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fill.jpg: cannot decode as an image (Image not of any known type"),
              std::string::npos)
        << e.what();
  }
}

// Note [Pixel budget] in data/image_decode.h: a 96-byte GIF of 23000 x 23000 (529 M pixels) made
// stb_image allocate 2.3 GB before it said "Corrupt GIF". Every format's declared size is now
// checked first, and the process's peak memory does not move.
TEST(ImageDecode, FilesDeclaringMorePixelsThanTheBudgetAreRefusedUndecoded) {
  struct Bomb {
    const char* name;
    std::string bytes;
  };
  const Bomb bombs[] = {{"bomb.gif", gif_declaring(23000, 23000)},
                        {"bomb.png", png_declaring(14000, 14000)},
                        // The largest a PNG can declare: its product overflowed the budget's check.
                        {"largest.png", png_declaring(0xFFFFFFFF, 0xFFFFFFFF)},
                        {"bomb.jpg", jpeg_declaring(20000, 20000)}};
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  for (const Bomb& b : bombs) {
    EXPECT_LT(b.bytes.size(), 200u) << b.name;
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(b.bytes.data()), b.bytes.size());
    try {
      decode_image(bytes, b.name);
      ADD_FAILURE() << b.name << " was decoded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(str_cat(b.name, ": declares ")), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("more than data.max_image_pixels = 178956970"), std::string::npos)
          << e.what();
    }
  }
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "KiB of peak memory taken by refused files";
  // Within the budget the same headers reach the decoder, which finds the data missing.
  const std::string small = gif_declaring(300, 200);
  try {
    decode_image({reinterpret_cast<const uint8_t*>(small.data()), small.size()}, "small.gif", 60000);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("declares"), std::string::npos) << e.what();
  }
  // A smaller budget (data.max_image_pixels) refuses it.
  try {
    decode_image({reinterpret_cast<const uint8_t*>(small.data()), small.size()}, "small.gif", 59999);
    ADD_FAILURE() << "a 300 x 200 GIF passed a budget of 59999 pixels";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("declares 300 x 200 = 60000 pixels"), std::string::npos) << e.what();
  }
}

TEST(ImageTransforms, ResizedCropsEqualTorchvisionOnTheSameBox) {
  if (const std::string& why = testing::python_unavailable("numpy, PIL, torchvision"); !why.empty())
    GTEST_SKIP() << why;
  for (const auto& row : manifest("crop")) {
    const RgbImage source = read_rgb(oracle_dir() / row[1]);
    const CropBox box{std::stoi(row[2]), std::stoi(row[3]), std::stoi(row[4]), std::stoi(row[5])};
    const RgbImage ours = resized_crop(source, box, std::stoi(row[6]), std::stoi(row[7]));
    const RgbImage theirs = read_rgb(oracle_dir() / row[8]);
    ASSERT_EQ(ours.width, theirs.width);
    ASSERT_EQ(ours.height, theirs.height);
    EXPECT_EQ(compare(ours, theirs).max, 0) << row[8] << ": box " << row[4] << "x" << row[5];
  }
}

TEST(ImageTransforms, EvaluationResizeAndCentreCropEqualTorchvision) {
  if (const std::string& why = testing::python_unavailable("numpy, PIL, torchvision"); !why.empty())
    GTEST_SKIP() << why;
  for (const auto& row : manifest("eval")) {
    const RgbImage source = read_rgb(oracle_dir() / row[1]);
    const int resize = std::stoi(row[2]), size = std::stoi(row[3]);
    const auto [w, h] = shorter_side_size(source.width, source.height, resize);
    const RgbImage resized = resized_crop(source, {0, 0, source.width, source.height}, w, h);
    const RgbImage ours = crop(resized, center_crop_box(w, h, size, size));
    const RgbImage theirs = read_rgb(oracle_dir() / row[4]);
    ASSERT_EQ(ours.width, theirs.width);
    EXPECT_EQ(compare(ours, theirs).max, 0) << row[4];
  }
}

// Different random numbers, same distribution: the mean share of the area a box covers and its
// mean log aspect ratio, over 20,000 draws, as torchvision's get_params gives them (standard
// errors about 0.002 and 0.002).
TEST(ImageTransforms, RandomResizedCropBoxesFollowTorchvisionsDistribution) {
  if (const std::string& why = testing::python_unavailable("numpy, PIL, torchvision"); !why.empty())
    GTEST_SKIP() << why;
  const auto rows = manifest("boxes");
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) {
    const int w = std::stoi(row[1]), h = std::stoi(row[2]), draws = std::stoi(row[3]);
    double scale = 0, log_ratio = 0;
    for (int i = 0; i < draws; ++i) {
      Rng rng(11, static_cast<uint64_t>(i));
      const CropBox b = random_resized_crop_box(w, h, ResizedCropOptions{}, rng);
      ASSERT_TRUE(b.x >= 0 && b.y >= 0 && b.width > 0 && b.height > 0 && b.x + b.width <= w && b.y + b.height <= h);
      scale += static_cast<double>(b.width) * b.height / (static_cast<double>(w) * h) / draws;
      log_ratio += std::log(static_cast<double>(b.width) / b.height) / draws;
    }
    EXPECT_NEAR(scale, std::stod(row[4]), 0.01) << w << "x" << h;
    EXPECT_NEAR(log_ratio, std::stod(row[5]), 0.01) << w << "x" << h;
  }
}

TEST(ImageTransforms, ImagesTooThinForAnyTryFallBackToTheCentredAllowedRatio) {
  Rng rng(1, 2);
  EXPECT_EQ(random_resized_crop_box(1000, 10, ResizedCropOptions{}, rng), (CropBox{493, 0, 13, 10}));
  EXPECT_EQ(random_resized_crop_box(10, 1000, ResizedCropOptions{}, rng), (CropBox{0, 493, 10, 13}));
}

TEST(ImageTransforms, CentreCropRoundsHalfToEvenAsPython) {
  EXPECT_EQ(center_crop_box(225, 300, 224, 224), (CropBox{0, 38, 224, 224}));  // round(0.5) = 0, round(38) = 38
  EXPECT_EQ(center_crop_box(227, 227, 224, 224), (CropBox{2, 2, 224, 224}));   // round(1.5) = 2
  EXPECT_THROW(center_crop_box(100, 100, 224, 224), Error);
  EXPECT_EQ(shorter_side_size(500, 375, 256), (std::array<int, 2>{341, 256}));  // int(256 * 500 / 375) = 341
}

TEST(ImageTransforms, FlipAndNormalizeAreExact) {
  RgbImage img;
  img.width = 3;
  img.height = 1;
  img.pixels = {0, 1, 2, 10, 11, 12, 255, 254, 253};
  flip_horizontally(img);
  EXPECT_EQ(img.pixels, (std::vector<uint8_t>{255, 254, 253, 10, 11, 12, 0, 1, 2}));
  std::vector<float> chw(9);
  normalize_into(img, {0.5f, 0.25f, 0.0f}, {0.5f, 0.25f, 1.0f}, chw.data());
  EXPECT_FLOAT_EQ(chw[0], (255.0f / 255.0f - 0.5f) / 0.5f);
  EXPECT_FLOAT_EQ(chw[4], (11.0f / 255.0f - 0.25f) / 0.25f);
  EXPECT_FLOAT_EQ(chw[8], 2.0f / 255.0f);
}

TEST(ImageFolder, ClassesAreSortedFoldersAndTheIndexIsCachedUntilAFolderChanges) {
  const fs::path root = fresh_dir("folder");
  for (const char* f : {"zebra/b.jpg", "zebra/a.png", "ant/x/deep.bmp", "ant/one.gif", "bee/1", "bee/.hidden"}) {
    fs::create_directories((root / f).parent_path());
    std::ofstream(root / f) << "x";
  }
  const ImageIndex a = load_image_index(root.string());
  EXPECT_EQ(a.classes, (std::vector<std::string>{"ant", "bee", "zebra"}));
  EXPECT_EQ(a.files,
            (std::vector<std::string>{"ant/one.gif", "ant/x/deep.bmp", "bee/1", "zebra/a.png", "zebra/b.jpg"}));
  EXPECT_EQ(a.labels, (std::vector<int32_t>{0, 0, 1, 2, 2}));
  ASSERT_TRUE(fs::exists(root / ".ringtrain_index.tsv"));

  // A cached index is used as it stands: mark it, and the mark comes back.
  {
    std::ifstream in(root / ".ringtrain_index.tsv");
    std::stringstream text;
    text << in.rdbuf();
    std::string s = text.str();
    s.replace(s.find("bee/1"), 5, "bee/2");
    std::ofstream(root / ".ringtrain_index.tsv") << s;
  }
  EXPECT_EQ(load_image_index(root.string()).files[2], "bee/2");
  EXPECT_EQ(load_image_index(root.string(), "", /*rebuild=*/true).files[2], "bee/1");
  // A new file makes its folder newer than the cache: the index is rebuilt by itself.
  std::ofstream(root / "bee" / "0") << "x";
  EXPECT_EQ(load_image_index(root.string()).files.size(), 6u);
  fs::remove_all(root);
}

// Note [One index at a time] in data/index_cache.cpp: loads that all find no cache and all write
// one, at once, each succeed with the same index, and leave one cache and no temporary file; a
// cache that cannot be written leaves the scan to be used.
TEST(ImageFolder, LoadsThatWriteTheCacheAtOnceAllSucceed) {
  const fs::path root = fresh_dir("racing");
  for (int i = 0; i < 40; ++i) {
    const fs::path f = root / (i % 2 ? "cat" : "dog") / (std::to_string(i) + ".png");
    fs::create_directories(f.parent_path());
    std::ofstream(f) << "x";
  }
  const ImageIndex want = scan_image_folder(root.string());
  for (int round = 0; round < 10; ++round) {
    fs::remove(root / ".ringtrain_index.tsv");
    std::vector<ImageIndex> got(8);
    std::vector<std::string> errors(8);
    std::vector<std::thread> loaders;
    for (size_t t = 0; t < got.size(); ++t)
      loaders.emplace_back([&, t] {
        try {
          got[t] = load_image_index(root.string());
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    for (std::thread& t : loaders) t.join();
    for (size_t t = 0; t < got.size(); ++t) {
      ASSERT_EQ(errors[t], "") << "round " << round << ", loader " << t;
      ASSERT_EQ(got[t].files, want.files) << "round " << round << ", loader " << t;
      ASSERT_EQ(got[t].labels, want.labels);
    }
  }
  std::vector<std::string> hidden;
  for (const fs::directory_entry& e : fs::directory_iterator(root))
    if (e.path().filename().string().starts_with(".")) hidden.push_back(e.path().filename().string());
  EXPECT_EQ(hidden, std::vector<std::string>{".ringtrain_index.tsv"});
  // Nowhere to write: the scan, as it stands.
  EXPECT_EQ(load_image_index(root.string(), (root / "no_such_folder" / "index.tsv").string()).files, want.files);
  fs::remove_all(root);
}

TEST(ImageFolder, TheIndexAsTextComesBackWholeAndMalformedTextIsRefused) {
  ImageIndex index;
  index.root = "/nowhere";
  index.classes = {"ant", "bee"};
  index.files = {"ant/a b.jpg", "bee/x/y.png", "bee/z"};
  index.labels = {0, 1, 1};
  const ImageIndex back = image_index_from_text("/elsewhere", image_index_text(index));
  EXPECT_EQ(back.root, "/elsewhere");
  EXPECT_EQ(back.classes, index.classes);
  EXPECT_EQ(back.files, index.files);
  EXPECT_EQ(back.labels, index.labels);
  std::string text = image_index_text(index);
  text.replace(text.find("1\tbee/z"), 1, "7");  // a label past the classes
  EXPECT_THROW(image_index_from_text("/elsewhere", text), Error);
  EXPECT_THROW(image_index_from_text("/elsewhere", "not an index"), Error);
}

// The exporter's folders hold exactly Fashion-MNIST: every image decodes to its IDX pixels and
// its folder's label is its IDX label.
TEST(ImageFolder, ExportedFashionMnistFoldersEqualTheIdxFiles) {
  const std::string idx = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(idx + "/t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "Fashion-MNIST is not installed in " << idx;
  const fs::path out = fresh_dir("fashion");
  ASSERT_TRUE(testing::export_fashion_mnist(out, 300));
  const LabeledImages ref =
      load_idx_dataset(idx + "/t10k-images-idx3-ubyte.gz", idx + "/t10k-labels-idx1-ubyte.gz", {0.0}, {1.0});
  const ImageIndex index = load_image_index((out / "val").string());
  ASSERT_EQ(index.classes.size(), 10u);
  ASSERT_EQ(index.files.size(), 300u);
  for (size_t i = 0; i < index.files.size(); ++i) {
    const int64_t n = std::stoll(fs::path(index.files[i]).stem().string());  // the file name is the IDX index
    EXPECT_EQ(index.labels[i], ref.labels[static_cast<size_t>(n)]) << index.files[i];
    const RgbImage img = read_image(index.path(i));
    ASSERT_EQ(img.width, 28);
    size_t bad = 0;
    for (size_t p = 0; p < 784; ++p)
      bad += static_cast<float>(img.pixels[p * 3]) / 255.0f != ref.pixels[static_cast<size_t>(n) * 784 + p];
    EXPECT_EQ(bad, 0u) << index.files[i];
  }
  fs::remove_all(out);
}

TEST(ImageFolder, AnEmptyClassFolderIsAnErrorNamingIt) {
  const fs::path root = fresh_dir("empty_class");
  fs::create_directories(root / "cat");
  fs::create_directories(root / "dog");
  std::ofstream(root / "cat" / "a.jpg") << "x";
  try {
    scan_image_folder(root.string());
    ADD_FAILURE() << "an empty class was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((root / "dog").string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(scan_image_folder((root / "nowhere").string()), Error);
  fs::remove_all(root);
}

}  // namespace
}  // namespace rt
