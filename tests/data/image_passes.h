// What the batch tests of image folders and shards share: a tree of random images, the options
// of a training pass, and one whole pass of a source.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/rng.h"
#include "data/batch_source.h"
#include "data/indexed_image_batches.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC    // a copy per test file that includes it
#include <stb/stb_image_write.h>  // a system header: its own warnings stay quiet

namespace rt {
namespace {

namespace fs = std::filesystem;

// Random-content images of assorted sizes, PNG and JPEG, `per_class` in each of three classes.
inline void write_tree(const fs::path& root, int per_class) {
  Rng rng(7, 0);
  for (int c = 0; c < 3; ++c) {
    const fs::path dir = root / ("class" + std::to_string(c));
    fs::create_directories(dir);
    for (int i = 0; i < per_class; ++i) {
      const int w = 40 + static_cast<int>(rng.below(60)), h = 40 + static_cast<int>(rng.below(60));
      std::vector<unsigned char> px(static_cast<size_t>(w * h * 3));
      for (unsigned char& v : px) v = static_cast<unsigned char>(rng.below(256));
      const std::string stem = (dir / ("img" + std::to_string(i))).string();
      const bool ok = i % 2 ? stbi_write_jpg((stem + ".jpg").c_str(), w, h, 3, px.data(), 90)
                            : stbi_write_png((stem + ".png").c_str(), w, h, 3, px.data(), w * 3);
      RT_CHECK(ok, "cannot write a test image under ", dir.string());
    }
  }
}

inline ImageBatchOptions training_options(int workers) {
  ImageBatchOptions o;
  o.sample.size = 24;
  o.training = true;
  o.seed = 11;
  o.workers = workers;
  o.prefetch = 3;
  return o;
}

struct Pass {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

inline Pass one_pass(BatchSource& source, int64_t epoch, const std::vector<int64_t>& indices, int64_t batch) {
  source.start(epoch, indices, batch);
  const auto [c, h, w] = source.sample_shape();
  Pass p;
  p.images.resize(indices.size() * static_cast<size_t>(c * h * w));
  p.labels.resize(indices.size());
  for (size_t b = 0; b < indices.size() / static_cast<size_t>(batch); ++b)
    source.next(p.images.data() + b * static_cast<size_t>(batch * c * h * w),
                p.labels.data() + b * static_cast<size_t>(batch));
  return p;
}

}  // namespace
}  // namespace rt
