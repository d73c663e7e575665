// Throughput of ringtrain's image-folder pipeline alone: decode, random resized crop, flip and
// normalise on worker threads into ready batches, as the trainer consumes them (no network).
// Prints one JSON line per pass and a summary with the median. bench/image_pipeline.sh runs it
// beside torchvision's DataLoader on the same files, bench/shards_vs_folders.sh on shards too.
//   image_pipeline_bench ROOT [--workers W] [--batch B] [--size S] [--passes P] [--decode region|whole]
//                        [--source folder|shards] [--cold 0|1]
// (--decode whole: every JPEG decoded whole before its crop, as before crop-region decoding;
// --source shards: ROOT holds tar shards; --cold 1: the page cache emptied before every pass, root only)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/check.h"
#include "data/indexed_image_batches.h"
#include "data/sampler.h"
#include "data/record_index.h"

namespace {

// Every clean page of the page cache dropped, so the next reads come from the disk.
void drop_page_cache() {
  ::sync();
  std::FILE* f = std::fopen("/proc/sys/vm/drop_caches", "w");
  RT_CHECK(f && std::fputs("3\n", f) >= 0 && std::fclose(f) == 0,
           "--cold 1 needs to write /proc/sys/vm/drop_caches (root)");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    RT_CHECK(
        argc >= 2,
        "usage: image_pipeline_bench ROOT [--workers W] [--batch B] [--size S] [--passes P] [--decode region|whole]");
    const std::string root = argv[1];
    int workers = 2, passes = 3;
    int64_t batch = 32, size = 224;
    bool region = true, shards = false, cold = false;
    for (int i = 2; i + 1 < argc; i += 2) {
      const std::string flag = argv[i];
      const long long v = std::atoll(argv[i + 1]);
      if (flag == "--decode") {
        const std::string how = argv[i + 1];
        RT_CHECK(how == "region" || how == "whole", "--decode takes region or whole, not ", how);
        region = how == "region";
      } else if (flag == "--source") {
        const std::string what = argv[i + 1];
        RT_CHECK(what == "folder" || what == "shards", "--source takes folder or shards, not ", what);
        shards = what == "shards";
      } else if (flag == "--cold") {
        cold = v != 0;
      } else if (flag == "--workers")
        workers = static_cast<int>(v);
      else if (flag == "--batch")
        batch = v;
      else if (flag == "--size")
        size = v;
      else if (flag == "--passes")
        passes = static_cast<int>(v);
      else
        RT_CHECK(false, "unknown flag ", flag);
    }
    rt::ImageBatchOptions o;
    o.sample.size = static_cast<int>(size);
    o.sample.crop_region_decode = region;
    o.training = true;
    o.workers = workers;
    o.prefetch = 2 * workers;
    rt::IndexedImageBatches source(
        shards ? rt::load_record_index(root, rt::DataSource::kShards) : rt::load_image_index(root), o);
    const rt::EpochSampler sampler(source.count(), batch, 1);
    std::vector<float> images(static_cast<size_t>(batch * o.sample.floats()));
    std::vector<int32_t> labels(static_cast<size_t>(batch));
    std::vector<double> rates;
    for (int pass = 0; pass <= passes; ++pass) {  // pass 0 warms the page cache and the threads
      const std::vector<int64_t> order = sampler.epoch_indices(pass);
      if (cold) drop_page_cache();
      const auto start = std::chrono::steady_clock::now();
      source.start(pass, order, batch);
      for (int64_t b = 0; b < sampler.steps_per_epoch(); ++b) source.next(images.data(), labels.data());
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double rate = static_cast<double>(order.size()) / s;
      if (pass > 0) rates.push_back(rate);
      std::printf(
          "{\"kind\":\"image_pipeline\",\"impl\":\"ringtrain\",\"pass\":%d,\"workers\":%d,\"images\":%zu,"
          "\"seconds\":%.3f,\"images_per_s\":%.2f}\n",
          pass, workers, order.size(), s, rate);
    }
    std::sort(rates.begin(), rates.end());
    std::printf("ringtrain: median %.1f images/s with %d workers (%.1f per worker), %zu files opened\n",
                rates[rates.size() / 2], workers, rates[rates.size() / 2] / workers,
                static_cast<size_t>(source.files_opened()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "image_pipeline_bench: %s\n", e.what());
    return 1;
  }
}
