// The image folder's batches: the same (seed, epoch) gives the same batches with 1 and 3 worker
// threads; unreadable files of every kind are skipped, named once and counted, or stop the pass
// naming the file; a gray folder (exported Fashion-MNIST) gives exactly the IDX loader's tensors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/rng.h"
#include "data/indexed_image_batches.h"
#include "data/labeled_images.h"
#include "tests/data/image_passes.h"
#include "tests/data/test_folders.h"
#include "tests/support/python_probe.h"

namespace fs = std::filesystem;

namespace rt {
namespace {

using testing::fresh_dir;

TEST(FolderBatches, TheSameSeedAndEpochGiveTheSameBatchesWithOneAndThreeWorkers) {
  const fs::path root = fresh_dir("determinism");
  write_tree(root, 8);
  const std::vector<int64_t> order = {5, 0, 23, 17, 9, 12, 3, 20, 1, 14, 7, 22};  // as a sampler would give
  IndexedImageBatches one(load_image_index(root.string()), training_options(1));
  IndexedImageBatches three(load_image_index(root.string()), training_options(3));
  for (int64_t epoch : {0, 1}) {
    const Pass a = one_pass(one, epoch, order, 4), b = one_pass(three, epoch, order, 4);
    EXPECT_EQ(a.images, b.images) << "epoch " << epoch;
    EXPECT_EQ(a.labels, b.labels) << "epoch " << epoch;
    const ImageIndex index = load_image_index(root.string());
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(a.labels[i], index.labels[static_cast<size_t>(order[i])]);
  }
  // Another epoch draws other crops; the evaluation transform draws none.
  EXPECT_NE(one_pass(one, 0, order, 4).images, one_pass(one, 1, order, 4).images);
  ImageBatchOptions eval = training_options(2);
  eval.training = false;
  eval.sample.resize = 28;
  IndexedImageBatches e(load_image_index(root.string()), eval);
  EXPECT_EQ(one_pass(e, 0, order, 3).images, one_pass(e, 5, order, 3).images);
  fs::remove_all(root);
}

// Note [Lent batches] in app/trainer_data.cpp: borrow() lends the slot the workers wrote, in memory
// from the allocator the options name, and gives the same batches as next(), which copies; a slot
// comes back at release() or the next borrow(), so micro-batches can be borrowed one after another
// with a single slot.
TEST(FolderBatches, BorrowedBatchesAreTheSlotsTheWorkersWroteAndEqualCopiedOnes) {
  const fs::path root = fresh_dir("borrow");
  write_tree(root, 8);
  const std::vector<int64_t> order = {5, 0, 23, 17, 9, 12, 3, 20, 1, 14, 7, 22};
  std::vector<std::pair<const char*, size_t>> blocks;  // what the allocator handed out
  std::mutex mu;
  ImageBatchOptions o = training_options(2);
  o.prefetch = 1;
  o.allocate = [&](size_t bytes) {
    auto memory = std::shared_ptr<void>(new char[bytes], std::default_delete<char[]>());
    std::lock_guard<std::mutex> lock(mu);
    blocks.emplace_back(static_cast<const char*>(memory.get()), bytes);
    return memory;
  };
  IndexedImageBatches lending(load_image_index(root.string()), o);
  IndexedImageBatches copying(load_image_index(root.string()), training_options(3));
  for (int64_t epoch : {0, 1}) {
    const Pass want = one_pass(copying, epoch, order, 3);
    lending.start(epoch, order, 3);
    const size_t floats = 3 * static_cast<size_t>(o.sample.floats());
    for (size_t b = 0; b < order.size() / 3; ++b) {
      const LentBatch lent = lending.borrow(nullptr, nullptr);  // no copy: nothing to write into
      const char* p = reinterpret_cast<const char*>(lent.images);
      EXPECT_TRUE(std::any_of(
          blocks.begin(), blocks.end(),
          [&](const auto& blk) { return p >= blk.first && p + floats * sizeof(float) <= blk.first + blk.second; }))
          << "batch " << b << " is not in a slot's memory";
      EXPECT_TRUE(std::equal(lent.images, lent.images + floats, want.images.begin() + static_cast<long>(b * floats)))
          << "epoch " << epoch << " batch " << b;
      EXPECT_TRUE(std::equal(lent.labels, lent.labels + 3, want.labels.begin() + static_cast<long>(b * 3)));
      if (b % 2) lending.release();  // else the next borrow gives it back
    }
  }
  EXPECT_EQ(blocks.size(), 1u) << "one slot (prefetch 1), allocated once";
  fs::remove_all(root);
}

// Every kind of unreadable file, beside good ones: `names` returns the bad ones' paths.
std::set<std::string> add_bad_files(const fs::path& root) {
  const fs::path dir = root / "class1";
  std::set<std::string> bad;
  auto add = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    bad.insert((dir / name).string());
  };
  add("a_empty.jpg", "");
  add("b_text.png", "not an image, just text\n");
  std::ifstream png(root / "class0" / "img0.png", std::ios::binary),
      jpg(root / "class0" / "img1.jpg", std::ios::binary);
  const std::string png_bytes((std::istreambuf_iterator<char>(png)), {}),
      jpg_bytes((std::istreambuf_iterator<char>(jpg)), {});
  add("c_truncated.png", png_bytes.substr(0, png_bytes.size() / 2));
  add("d_truncated.jpg", jpg_bytes.substr(0, 40));
  std::string noise(3000, '\0');
  Rng rng(3, 0);
  for (char& ch : noise) ch = static_cast<char>(rng.below(256));
  add("e_noise.jpg", noise);
  // 96 bytes declaring a 23000 x 23000 frame (Note [Pixel budget]).
  add("f_bomb.gif", std::string("GIF89a\xd8\x59\xd8\x59\0\0\0,\0\0\0\0\xd8\x59\xd8\x59\0\x08\x02\x4c\x01\0;", 30) +
                        std::string(66, '\0'));
  return bad;
}

TEST(FolderBatches, UnreadableFilesAreSkippedNamedOnceAndCounted) {
  const fs::path root = fresh_dir("bad");
  write_tree(root, 4);
  const std::set<std::string> bad = add_bad_files(root);
  const ImageIndex index = load_image_index(root.string());
  ASSERT_EQ(index.files.size(), 12u + bad.size());
  std::vector<std::string> warnings;
  std::mutex mu;
  ImageBatchOptions o = training_options(2);
  o.warn = [&](const std::string& m) {
    std::lock_guard<std::mutex> lock(mu);
    warnings.push_back(m);
  };
  IndexedImageBatches source(index, o);
  std::vector<int64_t> all(index.files.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  for (int64_t epoch : {0, 1}) {
    const Pass p = one_pass(source, epoch, all, 1);
    EXPECT_EQ(source.skipped(), static_cast<int64_t>(bad.size())) << "epoch " << epoch;
    // A bad file's place goes to the next readable file, with that file's label.
    for (size_t i = 0; i < all.size(); ++i) {
      size_t stand_in = i;
      while (bad.count(index.path(stand_in))) stand_in = (stand_in + 1) % all.size();
      EXPECT_EQ(p.labels[i], index.labels[stand_in]) << index.files[i];
    }
  }
  ASSERT_EQ(warnings.size(), bad.size()) << "each bad file is named once per run";
  for (const std::string& path : bad)
    EXPECT_EQ(std::count_if(warnings.begin(), warnings.end(),
                            [&](const std::string& w) { return w.find(path) != std::string::npos; }),
              1)
        << path;

  o.error_on_bad_file = true;
  IndexedImageBatches strict(index, o);
  try {
    one_pass(strict, 0, all, 1);
    ADD_FAILURE() << "data.on_bad_file = \"error\" went past a bad file";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_TRUE(std::any_of(bad.begin(), bad.end(), [&](const std::string& p) {
      return m.find(p) != std::string::npos;
    })) << m;
  }
  fs::remove_all(root);
}

TEST(FolderBatches, AGrayFolderGivesExactlyTheIdxTensors) {
  const std::string idx = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(idx + "/t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "Fashion-MNIST is not installed in " << idx;
  if (const std::string& why = testing::python_unavailable("numpy, PIL"); !why.empty()) GTEST_SKIP() << why;
  const fs::path out = fresh_dir("fashion");
  ASSERT_TRUE(testing::export_fashion_mnist(out, 200));
  const LabeledImages ref =
      load_idx_dataset(idx + "/t10k-images-idx3-ubyte.gz", idx + "/t10k-labels-idx1-ubyte.gz", {0.2860}, {0.3530});
  ImageBatchOptions o;
  o.sample.size = 28;
  o.sample.random_crop = false;
  o.sample.flip = false;
  o.sample.channels = 1;
  o.sample.mean = {0.2860, 0, 0};
  o.sample.std = {0.3530, 1, 1};
  o.training = true;  // without random crop or flip: the images as they are
  o.workers = 2;
  const ImageIndex index = load_image_index((out / "val").string());
  IndexedImageBatches source(index, o);
  std::vector<int64_t> all(index.files.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  const Pass p = one_pass(source, 0, all, 8);
  for (size_t i = 0; i < all.size(); ++i) {
    const size_t n = static_cast<size_t>(std::stoll(fs::path(index.files[i]).stem().string()));  // the IDX index
    EXPECT_EQ(p.labels[i], ref.labels[n]);
    EXPECT_TRUE(std::equal(p.images.begin() + static_cast<std::ptrdiff_t>(i * 784),
                           p.images.begin() + static_cast<std::ptrdiff_t>((i + 1) * 784),
                           ref.pixels.begin() + static_cast<std::ptrdiff_t>(n * 784)))
        << index.files[i];
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace rt
