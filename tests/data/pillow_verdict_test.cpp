// Note [Pillow's verdict] in data/jpeg_decode.cpp: a file is trained on exactly when Pillow loads
// it, whatever data.decode, the crop or the scale, and then with Pillow's pixels. A corpus written
// here (JPEGs truncated at several points, without their end marker, with extraneous bytes before
// it, with a damaged scan, progressive with its refinement scans left out, grayscale and CMYK; BMPs
// and PNGs whose headers declare more than the file holds or that Pillow does not support) is
// judged by Pillow (tests/data/pillow_verdict.py) and by ringtrain's whole, region and scaled
// decodes at several boxes, and by two epochs of training batches in each decode mode. The files
// whose headers declare gigabytes are refused by name within a small address-space limit.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/check.h"
#include "data/image_decode.h"
#include "data/image_folder.h"
#include "data/indexed_image_batches.h"
#include "data/image_transforms.h"
#include "data/jpeg_decode.h"
#include "tests/data/image_passes.h"
#include "tests/data/jpeg_encode.h"
#include "tests/data/test_folders.h"
#include "tests/support/python_probe.h"

namespace rt {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

void put_le(Bytes& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_be(Bytes& b, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A BMP file header and BITMAPINFOHEADER (40 bytes), then `pixels` bytes of data.
Bytes bmp(int32_t width, int32_t height, uint32_t compression, size_t pixels) {
  Bytes b = {'B', 'M'};
  put_le(b, 54 + pixels, 4);
  put_le(b, 0, 4);
  put_le(b, 54, 4);  // where the pixels start
  put_le(b, 40, 4);
  put_le(b, static_cast<uint32_t>(width), 4);
  put_le(b, static_cast<uint32_t>(height), 4);
  put_le(b, 1, 2);   // planes
  put_le(b, 24, 2);  // bits per pixel
  put_le(b, compression, 4);
  for (int i = 0; i < 5; ++i) put_le(b, 0, 4);
  for (size_t i = 0; i < pixels; ++i) b.push_back(static_cast<uint8_t>(i * 7));
  return b;
}

void png_chunk(Bytes& b, const char* type, const Bytes& data, uint32_t declared_length, bool good_crc = true) {
  put_be(b, declared_length, 4);
  const size_t start = b.size();
  b.insert(b.end(), type, type + 4);
  b.insert(b.end(), data.begin(), data.end());
  uLong crc = crc32(0, b.data() + start, static_cast<uInt>(b.size() - start));
  put_be(b, good_crc ? crc : crc ^ 1, 4);
}

// An 8-bit RGB PNG of w x h; its IDAT may declare a length of its own.
Bytes png(int w, int h, bool good_ihdr_crc = true, uint32_t idat_length = 0) {
  Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes ihdr;
  put_be(ihdr, static_cast<uint32_t>(w), 4);
  put_be(ihdr, static_cast<uint32_t>(h), 4);
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});
  png_chunk(b, "IHDR", ihdr, 13, good_ihdr_crc);
  Bytes raw;
  for (int y = 0; y < h; ++y) {
    raw.push_back(0);  // filter: none
    for (int x = 0; x < 3 * w; ++x) raw.push_back(static_cast<uint8_t>(x * 5 + y * 11));
  }
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  Bytes z(size);
  compress(z.data(), &size, raw.data(), static_cast<uLong>(raw.size()));
  z.resize(size);
  png_chunk(b, "IDAT", z, idat_length ? idat_length : static_cast<uint32_t>(z.size()));
  png_chunk(b, "IEND", {}, 0);
  return b;
}

// Where the entropy-coded data of a JPEG's last scan starts: after its last SOS segment.
size_t last_scan_start(const Bytes& j) {
  size_t at = 0;
  for (size_t i = 2; i + 3 < j.size(); ++i)
    if (j[i] == 0xFF && j[i + 1] == 0xDA) at = i + 2 + (size_t{j[i + 2]} << 8 | j[i + 3]);
  return at;
}

std::map<std::string, Bytes> corpus() {
  std::map<std::string, Bytes> files;
  // libjpeg's simple progression without its refinement scans: the DC and the luma AC left at
  // Al = 1, so libjpeg smooths blocks (Note [Crop-region decoding]).
  static const jpeg_scan_info kUnrefined[] = {
      {3, {0, 1, 2}, 0, 0, 0, 1}, {1, {0}, 1, 5, 0, 2},  {1, {2}, 1, 63, 0, 1},
      {1, {1}, 1, 63, 0, 1},      {1, {0}, 6, 63, 0, 2}, {1, {0}, 1, 63, 2, 1},
  };
  const Bytes baseline = encode({"baseline", 120, 90, JCS_RGB, 2, 2, false, 0});
  const Bytes progressive = encode({"progressive", 120, 90, JCS_RGB, 2, 2, true, 0});
  const Bytes gray = encode({"grayscale", 100, 70, JCS_GRAYSCALE, 1, 1, false, 0});
  const Bytes cmyk = encode({"CMYK", 64, 48, JCS_CMYK, 1, 1, false, 0});
  files["baseline.jpg"] = baseline;
  files["progressive.jpg"] = progressive;
  files["gray.jpg"] = gray;
  files["cmyk.jpg"] = cmyk;
  files["unrefined.jpg"] = encode({"unrefined", 40, 40, JCS_RGB, 2, 2, true, 0, kUnrefined, 6});
  files["unrefined_wide.jpg"] = encode({"unrefined", 150, 60, JCS_RGB, 2, 1, true, 0, kUnrefined, 6});
  const std::pair<const char*, const Bytes*> damaged[] = {
      {"baseline", &baseline}, {"progressive", &progressive}, {"gray", &gray}, {"cmyk", &cmyk}};
  for (const auto& [stem, b] : damaged) {
    const std::string s = stem;
    for (int percent : {10, 30, 60, 90})
      files[s + "_cut" + std::to_string(percent) + ".jpg"] = Bytes(b->begin(), b->begin() + b->size() * percent / 100);
    files[s + "_no_end_marker.jpg"] = Bytes(b->begin(), b->end() - 2);
    files[s + "_cut_before_end_marker.jpg"] = Bytes(b->begin(), b->end() - 6);
    Bytes extraneous(b->begin(), b->end() - 2);
    extraneous.insert(extraneous.end(), {0x00, 0x11, 0x22, 0x33, 0xFF, 0xD9});
    files[s + "_extraneous_bytes.jpg"] = extraneous;
    Bytes scrambled = *b;
    const size_t from = last_scan_start(*b), middle = from + (b->size() - from) / 2;
    for (size_t i = middle; i < middle + 12 && i + 2 < b->size(); ++i) scrambled[i] = 0x5A;
    files[s + "_damaged_scan.jpg"] = scrambled;
  }
  // A top-down BMP (negative height) of 1805 x 196608 pixels in 59 bytes, with a compression
  // Pillow does not know; a BMP whose pixels stop halfway; a sound one.
  files["bmp_top_down_huge.bmp"] = bmp(1805, -196608, 0x80000000u, 5);
  files["bmp_half.bmp"] = bmp(20, 10, 0, 300);
  files["bmp_ok.bmp"] = bmp(20, -10, 0, 600);
  // A PNG whose IDAT declares 1.2 GB in 573 bytes; one whose header's checksum is wrong; one cut in
  // its image data; a sound one.
  Bytes huge = png(64, 64, true, 0x48000000u);
  huge.resize(573, 0);
  files["png_idat_huge.png"] = huge;
  files["png_bad_header_crc.png"] = png(16, 8, false);
  const Bytes sound = png(40, 30);
  files["png_cut.png"] = Bytes(sound.begin(), sound.begin() + sound.size() * 2 / 3);
  files["png_ok.png"] = sound;
  return files;
}

struct Verdict {
  bool ok = false;
  int width = 0, height = 0;
  Bytes rgb;
  std::string words;
};

std::map<std::string, Verdict> pillow_verdicts(const std::string& dir) {
  const std::string cmd = "/usr/bin/python3 " RT_SOURCE_DIR "/tests/data/pillow_verdict.py " + dir;
  RT_CHECK(std::system(cmd.c_str()) == 0, "pillow_verdict.py failed");
  std::map<std::string, Verdict> out;
  std::ifstream in(dir + "/verdicts.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string name, what;
    s >> name >> what;
    Verdict v;
    v.ok = what == "ok";
    if (v.ok) {
      s >> v.width >> v.height;
      std::ifstream f(dir + "/" + name + ".rgb", std::ios::binary);
      v.rgb.assign(std::istreambuf_iterator<char>(f), {});
    } else {
      std::getline(s, v.words);
    }
    out[name] = v;
  }
  return out;
}

std::string verdict_words(bool ok, const std::string& why) { return ok ? "decoded" : "refused (" + why + ")"; }

// The boxes a crop can take, in an image of w x h: its top, middle, bottom, all of it, a corner.
std::vector<CropBox> boxes(int w, int h) {
  return {{0, 0, w, std::max(1, h / 4)},
          {w / 4, h / 3, std::max(1, w / 2), std::max(1, h / 3)},
          {0, h - std::max(1, h / 4), w, std::max(1, h / 4)},
          {0, 0, w, h},
          {w - 3, h - 3, 3, 3}};
}

TEST(PillowVerdict, EveryDecodeModeAndCropGivesPillowsVerdictAndPixels) {
  if (const std::string& why = testing::python_unavailable("PIL"); !why.empty()) GTEST_SKIP() << why;
  const std::string dir = testing::fresh_dir("pillow_verdict").string();
  const auto files = corpus();
  for (const auto& [name, bytes] : files)
    std::ofstream(dir + "/" + name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  const auto pillow = pillow_verdicts(dir);
  ASSERT_EQ(pillow.size(), files.size());
  int refused = 0;
  for (const auto& [name, bytes] : files) {
    const Verdict& p = pillow.at(name);
    refused += !p.ok;
    bool ok = true;
    std::string why;
    RgbImage whole;
    try {
      whole = decode_image(bytes, name);
    } catch (const Error& e) {
      ok = false;
      why = e.what();
    }
    EXPECT_EQ(ok, p.ok) << name << ": ringtrain " << verdict_words(ok, why) << ", Pillow "
                        << verdict_words(p.ok, p.words);
    if (ok && p.ok) {
      EXPECT_EQ(whole.width, p.width) << name;
      EXPECT_EQ(whole.pixels, p.rgb) << name << ": the whole decode's pixels differ from Pillow's";
    }
    if (!looks_like_jpeg(bytes)) continue;
    // The region and scaled decodes: the same verdict at every box and scale, and the pixels of
    // the same box of the whole decode at that scale (Pillow's, at scale 1).
    for (int scale : {1, 2, 4}) {
      RgbImage scaled_whole;
      bool scaled_ok = true;
      try {
        scaled_whole = decode_jpeg(bytes, name, kDefaultMaxImagePixels, [&](int w, int h) {
          return JpegRegion{{0, 0, (w + scale - 1) / scale, (h + scale - 1) / scale}, scale};
        });
      } catch (const Error&) {
        scaled_ok = false;
      }
      EXPECT_EQ(scaled_ok, p.ok) << name << ": the whole decode at 1/" << scale << " against Pillow "
                                 << verdict_words(p.ok, p.words);
      int W = 0, H = 0;
      try {
        decode_jpeg(bytes, name, kDefaultMaxImagePixels, [&](int w, int h) {
          W = (w + scale - 1) / scale, H = (h + scale - 1) / scale;
          return JpegRegion{{0, 0, 1, 1}, scale};
        });
      } catch (const Error&) {
      }
      if (W < 4 || H < 4) continue;  // the header itself is unreadable: every decode refuses it above
      for (const CropBox& box : boxes(W, H)) {
        bool box_ok = true;
        std::string box_why;
        RgbImage part;
        try {
          part = decode_jpeg(bytes, name, kDefaultMaxImagePixels, [&](int, int) { return JpegRegion{box, scale}; });
        } catch (const Error& e) {
          box_ok = false;
          box_why = e.what();
        }
        EXPECT_EQ(box_ok, p.ok) << name << ": box " << box.x << "," << box.y << " " << box.width << "x" << box.height
                                << " at 1/" << scale << ": ringtrain " << verdict_words(box_ok, box_why) << ", Pillow "
                                << verdict_words(p.ok, p.words);
        if (box_ok && scaled_ok) {
          EXPECT_EQ(part.pixels, crop(scaled_whole, box).pixels)
              << name << ": box " << box.x << "," << box.y << " " << box.width << "x" << box.height << " at 1/" << scale
              << " differs from the same box of the whole decode";
        }
      }
    }
  }
  EXPECT_GE(refused, 10) << "the corpus should hold files Pillow refuses";
}

// Two epochs of training batches over a folder of the corpus, in each data.decode mode, skip
// exactly the files Pillow refuses, each epoch.
TEST(PillowVerdict, EveryEpochAndDecodeModeSkipsExactlyThePillowRefusals) {
  if (const std::string& why = testing::python_unavailable("PIL"); !why.empty()) GTEST_SKIP() << why;
  const std::string flat = testing::fresh_dir("pillow_verdict_flat").string();
  const fs::path root = testing::fresh_dir("pillow_verdict_tree");
  const auto files = corpus();
  int k = 0;
  for (const auto& [name, bytes] : files) {
    for (const fs::path& dir : {fs::path(flat), root / ("class" + std::to_string(k++ % 2))}) {
      fs::create_directories(dir);
      std::ofstream(dir / name, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
  }
  std::set<std::string> refused;
  for (const auto& [name, v] : pillow_verdicts(flat))
    if (!v.ok) refused.insert(name);
  const ImageIndex index = load_image_index(root.string());
  ASSERT_EQ(index.files.size(), files.size());
  std::vector<int64_t> all(index.files.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  for (const char* mode : {"whole", "region", "scaled"}) {
    std::set<std::string> named;
    std::mutex mu;
    ImageBatchOptions o = training_options(2);
    o.sample.crop_region_decode = std::string(mode) != "whole";
    o.sample.scaled_decode = std::string(mode) == "scaled";
    o.warn = [&](const std::string& m) {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [name, bytes] : files)
        if (m.find("/" + name) != std::string::npos) named.insert(name);
    };
    IndexedImageBatches source(index, o);
    for (int64_t epoch : {0, 1}) {
      one_pass(source, epoch, all, 1);
      EXPECT_EQ(source.skipped(), static_cast<int64_t>(refused.size())) << mode << ", epoch " << epoch;
    }
    EXPECT_EQ(named, refused) << mode << ": the files skipped are not the ones Pillow refuses";
  }
  fs::remove_all(root);
}

// A header that declares gigabytes is refused by name, quickly, without the allocation: in a
// child process whose address space may grow by 64 MiB only.
TEST(PillowVerdict, HostileHeadersAreRefusedWithinASmallAddressSpace) {
  const auto files = corpus();
  for (const char* name : {"bmp_top_down_huge.bmp", "png_idat_huge.png"}) {
    const Bytes& bytes = files.at(name);
    const auto start = std::chrono::steady_clock::now();
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      long pages = 0;
      std::ifstream("/proc/self/statm") >> pages;
      const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{64} << 20);
      const rlimit r{limit, limit};
      setrlimit(RLIMIT_AS, &r);
      try {
        decode_image(bytes, name);
      } catch (const Error& e) {
        const std::string words = e.what();
        if (words.find("Out of memory") != std::string::npos) _exit(3);  // stb_image tried, and failed
        _exit(words.find(name) != std::string::npos ? 0 : 2);
      } catch (const std::bad_alloc&) {
        _exit(3);
      }
      _exit(1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(WIFEXITED(status)) << name << ": the decoding process died (signal " << WTERMSIG(status) << ")";
    EXPECT_EQ(WEXITSTATUS(status), 0) << name << ": 1 = decoded, 2 = refused without its name, 3 = out of memory";
    EXPECT_LT(seconds, 1.0) << name;
  }
}

}  // namespace
}  // namespace rt
