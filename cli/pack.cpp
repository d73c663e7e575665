// `ringtrain pack --from DIR --to OUT [--shard-mb N]`: an image folder's training and evaluation
// trees (DIR/train, DIR/val: data.train_folder and data.val_folder's defaults) written as tar
// shards in OUT/train and OUT/val, to train from with data.source = "shards" and data.dir = OUT.
#include <filesystem>
#include <iostream>

#include "base/check.h"
#include "cli/commands.h"
#include "data/image_folder.h"
#include "data/record_index.h"
#include "data/shard_writer.h"

namespace fs = std::filesystem;

namespace rt {

int pack_command(const CliArgs& args) {
  int parts = 0;
  for (const char* part : {"train", "val"}) {
    const fs::path from = fs::path(args.pack_from) / part, to = fs::path(args.pack_to) / part;
    if (!fs::is_directory(from)) continue;
    ++parts;
    const ImageIndex index = load_image_index(from.string());
    std::cout << "ringtrain pack: " << from.string() << ": " << index.files.size() << " images of "
              << index.classes.size() << " classes" << std::endl;
    const int64_t total = static_cast<int64_t>(index.files.size());
    const PackedShards packed =
        pack_shards(index, to.string(), part, static_cast<uint64_t>(args.shard_mb * 1024 * 1024), [&](int64_t done) {
          if (done % 10000 == 0 && done < total) std::cout << "  " << done << " / " << total << std::endl;
        });
    // Indexing the shards now checks them and leaves the cache the first run would build.
    const ImageIndex check = load_record_index(to.string(), DataSource::kShards);
    RT_CHECK(static_cast<int64_t>(check.files.size()) == packed.samples && check.left_out.empty(),
             "the shards written to '", to.string(), "' index ", check.files.size(), " samples of ", packed.samples,
             check.left_out.empty() ? "" : str_cat(": ", check.left_out[0]));
    std::cout << "ringtrain pack: " << to.string() << ": " << packed.samples << " samples in " << packed.shards
              << " shards, " << packed.bytes / (1024 * 1024) << " MiB, and classes.txt" << std::endl;
  }
  RT_CHECK(parts > 0, "ringtrain pack: '", args.pack_from,
           "' holds neither train/ nor val/ (expected DIR/train/<class>/<image> and DIR/val/<class>/<image>)");
  return 0;
}

}  // namespace rt
