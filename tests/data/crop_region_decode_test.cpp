// Note [Crop-region decoding] in data/jpeg_decode.cpp: decoding a JPEG's box gives exactly the
// pixels of decoding the whole image and cropping the box, for every chroma subsampling, grayscale,
// CMYK, progressive and restart-marker files of odd sizes, 1,000 random boxes each (files written
// here with libjpeg-turbo's encoder); and a training sample made that way equals the one made from
// the whole decode.
#include <gtest/gtest.h>
#include <jpeglib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/rng.h"
#include "data/image_sample.h"
#include "data/image_transforms.h"
#include "data/jpeg_decode.h"
#include "tests/data/jpeg_encode.h"
#include "tests/data/test_folders.h"

namespace rt {
namespace {

const Variant kVariants[] = {
    {"4:4:4", 203, 157, JCS_RGB, 1, 1, false, 0},
    {"4:2:2", 201, 151, JCS_RGB, 2, 1, false, 0},
    {"4:2:0", 199, 163, JCS_RGB, 2, 2, false, 0},
    {"4:4:0", 97, 131, JCS_RGB, 1, 2, false, 0},
    {"grayscale", 187, 149, JCS_GRAYSCALE, 1, 1, false, 0},
    {"progressive 4:2:0", 211, 141, JCS_RGB, 2, 2, true, 0},
    {"restart markers 4:2:0", 193, 167, JCS_RGB, 2, 2, false, 1},
    {"CMYK", 121, 89, JCS_CMYK, 1, 1, false, 0},
};

TEST(CropRegionDecode, EveryBoxEqualsTheWholeDecodeCropped) {
  for (const Variant& v : kVariants) {
    const std::vector<uint8_t> bytes = encode(v);
    const RgbImage whole = decode_jpeg(bytes, v.name);
    ASSERT_EQ(whole.width, v.width) << v.name;
    Rng rng(7, 1, 0);
    int differing = 0;
    for (int k = 0; k < 1000; ++k) {
      CropBox box;
      box.x = static_cast<int>(rng.uniform() * v.width);
      box.y = static_cast<int>(rng.uniform() * v.height);
      box.width = 1 + static_cast<int>(rng.uniform() * (v.width - box.x));
      box.height = 1 + static_cast<int>(rng.uniform() * (v.height - box.y));
      if (k == 0) box = {0, 0, v.width, v.height};
      if (k == 1) box = {v.width - 1, v.height - 1, 1, 1};
      const RgbImage part = decode_jpeg(bytes, v.name, kDefaultMaxImagePixels, [&](int w, int h) {
        EXPECT_EQ(w, v.width);
        EXPECT_EQ(h, v.height);
        return JpegRegion{box, 1};
      });
      const RgbImage want = crop(whole, box);
      if (part.width != want.width || part.height != want.height || part.pixels != want.pixels) {
        if (differing++ < 3)
          ADD_FAILURE() << v.name << ": box " << box.x << "," << box.y << " " << box.width << "x" << box.height
                        << " differs from the whole decode cropped";
      }
    }
    EXPECT_EQ(differing, 0) << v.name;
  }
}

TEST(CropRegionDecode, ATrainingSampleEqualsTheOneFromTheWholeImage) {
  const std::vector<uint8_t> bytes = encode(kVariants[2]);
  ImageSampleOptions o;
  o.size = 64;
  ImageSampleOptions whole = o;
  whole.crop_region_decode = false;
  for (int64_t sample = 0; sample < 50; ++sample) {
    const RgbImage a = sample_image(bytes, "x.jpg", o, /*training=*/true, 3, 1, sample);
    const RgbImage b = sample_image(bytes, "x.jpg", whole, /*training=*/true, 3, 1, sample);
    const RgbImage c = transform_image(decode_jpeg(bytes, "x.jpg"), o, /*training=*/true, 3, 1, sample);
    ASSERT_EQ(a.pixels, b.pixels) << "sample " << sample;
    ASSERT_EQ(b.pixels, c.pixels) << "sample " << sample;
  }
}

// data.decode = "scaled" (Note [Scaled decoding]) against Pillow's draft mode and resize(box=...)
// on the same files and boxes: equal bytes for every subsampling, grayscale, progressive and
// restart markers, at every scale the rule picks (1/1 to 1/8).
TEST(ScaledDecode, EqualsPillowsDraftThenResizeOfTheBox) {
  if (const std::string& why = testing::python_unavailable("PIL"); !why.empty()) GTEST_SKIP() << why;
  const std::string dir = testing::fresh_dir("scaled_decode").string();
  const int kBoxes = 300;
  std::ofstream list(dir + "/list.txt");
  std::vector<std::vector<uint8_t>> ours;
  int scales[9] = {};
  for (Variant v : kVariants) {
    if (v.space == JCS_CMYK) continue;                       // Pillow's draft keeps CMYK's own mode
    v.width = v.width * 3 + 1, v.height = v.height * 3 + 2;  // room for 1/8 scale at kSize
    const std::vector<uint8_t> bytes = encode(v);
    const std::string path = str_cat(dir, "/", ours.size() / kBoxes, ".jpg");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    Rng rng(5, 2, 0);
    for (int k = 0; k < kBoxes; ++k) {
      const int size = k % 2 ? 40 : 120;  // small outputs for 1/8, large ones for 1/1
      CropBox box;
      const RgbImage got = scaled_resized_crop(
          bytes, path, kDefaultMaxImagePixels,
          [&](int w, int h) {
            box = random_resized_crop_box(w, h, ResizedCropOptions{}, rng);
            return box;
          },
          size);
      const int a = draft_scale(box, size);
      ++scales[a];
      list << path << " " << box.x << " " << box.y << " " << box.width << " " << box.height << " " << a << " " << size
           << "\n";
      ours.push_back(got.pixels);
    }
  }
  list.close();
  const std::string cmd =
      str_cat(testing::kPython, " " RT_SOURCE_DIR "/tests/data/pillow_draft.py ", dir, "/list.txt ", dir, "/out.rgb");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(dir + "/out.rgb", std::ios::binary);
  const std::string theirs((std::istreambuf_iterator<char>(in)), {});
  size_t at = 0;
  int differing = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    ASSERT_LE(at + ours[i].size(), theirs.size());
    if (std::memcmp(ours[i].data(), theirs.data() + at, ours[i].size()) != 0 && differing++ < 3)
      ADD_FAILURE() << "sample " << i << " (file " << i / kBoxes << ") differs from Pillow's draft path";
    at += ours[i].size();
  }
  EXPECT_EQ(at, theirs.size());
  EXPECT_EQ(differing, 0);
  for (int a : {1, 2, 4, 8}) EXPECT_GT(scales[a], 0) << "no box at 1/" << a;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rt
