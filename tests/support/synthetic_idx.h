// A small synthetic image-classification set written as raw IDX files, for fast trainer tests:
// class c lights up a different square of the image, plus noise, so a CNN learns it quickly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/rng.h"
#include "config/config.h"

namespace rt::testing {

inline void write_idx(const std::filesystem::path& path, const std::vector<int32_t>& dims,
                      const std::vector<uint8_t>& data) {
  std::ofstream f(path, std::ios::binary);
  const uint8_t magic[4] = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  f.write(reinterpret_cast<const char*>(magic), 4);
  for (int32_t d : dims) {
    const uint8_t be[4] = {static_cast<uint8_t>(d >> 24), static_cast<uint8_t>(d >> 16), static_cast<uint8_t>(d >> 8),
                           static_cast<uint8_t>(d)};
    f.write(reinterpret_cast<const char*>(be), 4);
  }
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

inline void write_synthetic_set(const std::filesystem::path& dir, const std::string& prefix, int32_t count,
                                int32_t side, int classes, uint64_t seed) {
  std::vector<uint8_t> images(static_cast<size_t>(count) * side * side), labels(static_cast<size_t>(count));
  Rng rng(seed, 99);
  const int32_t half = side / 2;
  for (int32_t n = 0; n < count; ++n) {
    const int c = static_cast<int>(rng.below(static_cast<uint64_t>(classes)));
    labels[static_cast<size_t>(n)] = static_cast<uint8_t>(c);
    for (int32_t y = 0; y < side; ++y)
      for (int32_t x = 0; x < side; ++x) {
        const bool lit = (y < half) == (c % 2 == 0) && (x < half) == (c / 2 % 2 == 0);
        const double v = (lit ? 160.0 : 40.0) + 60.0 * rng.uniform();
        images[static_cast<size_t>(n) * side * side + static_cast<size_t>(y * side + x)] = static_cast<uint8_t>(v);
      }
  }
  write_idx(dir / (prefix + "-images"), {count, side, side}, images);
  write_idx(dir / (prefix + "-labels"), {count}, labels);
}

// A config that trains simple_cnn on a synthetic set of 4 classes in `dir` (created here).
inline Config synthetic_config(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir / "data");
  write_synthetic_set(dir / "data", "train", 640, 12, 4, 1);
  write_synthetic_set(dir / "data", "test", 160, 12, 4, 2);
  Config c;
  c.model.name = "simple_cnn";
  c.model.num_classes = 4;
  c.model.dropout = 0.2;
  c.data.dir = (dir / "data").string();
  c.data.train_images = "train-images";
  c.data.train_labels = "train-labels";
  c.data.test_images = "test-images";
  c.data.test_labels = "test-labels";
  c.data.mean = {0.5};
  c.data.std = {0.25};
  c.train.epochs = 2;
  c.train.batch_per_rank = 32;
  c.train.lr_per_256 = 0.4;
  c.train.threads = 2;
  c.eval.batch = 50;
  c.log.progress = ProgressMode::kNone;
  c.checkpoint.dir = (dir / "run").string();
  return c;
}

}  // namespace rt::testing
