// Tar shards and TFRecord files (data/record_index.h) against the image folder they were made from: shards written by
// Python's tarfile (GNU and PAX headers, long names) and by `ringtrain pack`'s writer give batches
// byte-identical to the folder's with the same seed, and a pass opens each shard once; damaged
// shards, members without labels or with labels out of range, and an index that no longer matches
// its shard are named (shard and member) and left out, skipped, or refused. TFRecords written with
// Python's protobuf give the folder's batches too; bad CRCs, labels and truncation are named by file
// and offset.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "base/check.h"
#include "data/record_index.h"
#include "data/shard_writer.h"
#include "data/tar_members.h"
#include "data/tf_example.h"
#include "base/tfrecord.h"
#include "tests/data/image_passes.h"
#include "tests/data/test_folders.h"
#include "tests/support/python_probe.h"

namespace rt {
namespace {

using testing::fresh_dir;

// tests/data/write_shards.py ROOT OUT args...; false where it failed.
bool python_shards(const fs::path& root, const fs::path& out, const std::string& args) {
  const std::string cmd = str_cat(testing::kPython, " " RT_SOURCE_DIR "/tests/data/write_shards.py ", root.string(),
                                  " ", out.string(), " ", args);
  return std::system(cmd.c_str()) == 0;
}

std::vector<int64_t> every(size_t n) {
  std::vector<int64_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = static_cast<int64_t>(i);
  return all;
}

bool mentions(const std::vector<std::string>& lines, const std::string& a, const std::string& b) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.find(a) != std::string::npos && l.find(b) != std::string::npos;
  });
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(ShardBatches, PythonAndPackedShardsGiveTheFolderBatchesOpeningEachShardOncePerPass) {
  if (const std::string& why = testing::python_unavailable("tarfile"); !why.empty()) GTEST_SKIP() << why;
  const fs::path dir = fresh_dir("shards_same");
  write_tree(dir / "tree", 8);
  ASSERT_TRUE(python_shards(dir / "tree", dir / "gnu", "--format gnu --per-shard 5"));
  ASSERT_TRUE(python_shards(dir / "tree", dir / "pax", "--format pax --per-shard 7 --long-names --classes"));
  ASSERT_TRUE(python_shards(dir / "tree", dir / "gnu_long", "--format gnu --per-shard 24 --long-names"));
  const ImageIndex folder = load_image_index((dir / "tree").string());
  pack_shards(folder, (dir / "packed").string(), "train", 8 * 1024);

  const std::vector<int64_t> order = {5, 0, 23, 17, 9, 12, 3, 20, 1, 14, 7, 22, 2, 4, 6, 8};
  IndexedImageBatches want(folder, training_options(2));
  ImageBatchOptions eval = training_options(2);
  eval.training = false;
  eval.sample.resize = 28;
  IndexedImageBatches want_eval(folder, eval);
  for (const char* kind : {"gnu", "pax", "gnu_long", "packed"}) {
    SCOPED_TRACE(kind);
    const ImageIndex shards = load_record_index((dir / kind).string(), DataSource::kShards);
    ASSERT_EQ(shards.files.size(), folder.files.size());
    EXPECT_TRUE(shards.left_out.empty()) << shards.left_out[0];
    EXPECT_EQ(shards.labels, folder.labels);
    EXPECT_EQ(shards.classes.size(), 3u);
    IndexedImageBatches got(shards, training_options(3));
    for (int64_t epoch : {0, 1}) {
      const int64_t opened = got.files_opened(), folder_opened = want.files_opened();
      const Pass a = one_pass(want, epoch, order, 4), b = one_pass(got, epoch, order, 4);
      EXPECT_EQ(a.images, b.images) << "epoch " << epoch;
      EXPECT_EQ(a.labels, b.labels) << "epoch " << epoch;
      // Each shard a pass reads is opened once in it, however many of its samples it reads.
      std::vector<uint32_t> read;
      for (int64_t i : order) read.push_back(shards.spans[static_cast<size_t>(i)].container);
      std::sort(read.begin(), read.end());
      EXPECT_EQ(got.files_opened() - opened, std::unique(read.begin(), read.end()) - read.begin());
      EXPECT_EQ(want.files_opened() - folder_opened, static_cast<int64_t>(order.size()));  // a file per image
    }
    IndexedImageBatches got_eval(shards, eval);
    EXPECT_EQ(one_pass(want_eval, 0, order, 4).images, one_pass(got_eval, 0, order, 4).images);
  }
  EXPECT_EQ(file_text(dir / "packed" / "classes.txt"), "class0\nclass1\nclass2\n");
  fs::remove_all(dir);
}

TEST(ShardBatches, TheIndexIsCachedAndRebuiltWhenAShardChanges) {
  if (const std::string& why = testing::python_unavailable("tarfile"); !why.empty()) GTEST_SKIP() << why;
  const fs::path dir = fresh_dir("shards_cache");
  write_tree(dir / "tree", 4);
  ASSERT_TRUE(python_shards(dir / "tree", dir / "s", "--format gnu --per-shard 5"));
  const ImageIndex first = load_record_index((dir / "s").string(), DataSource::kShards);
  ASSERT_TRUE(fs::exists(dir / "s" / ".ringtrain_shards.tsv"));
  // The text round trip is what rank 0 sends; the cache is what the next run reads.
  const ImageIndex sent = record_index_from_text((dir / "s").string(), record_index_text(first));
  const ImageIndex cached = load_record_index((dir / "s").string(), DataSource::kShards);
  for (const ImageIndex* x : {&sent, &cached}) {
    ASSERT_EQ(x->spans.size(), first.spans.size());
    EXPECT_EQ(x->files, first.files);
    EXPECT_EQ(x->labels, first.labels);
    EXPECT_EQ(x->containers, first.containers);
    EXPECT_EQ(x->classes, first.classes);
    for (size_t i = 0; i < first.spans.size(); ++i) EXPECT_EQ(x->spans[i].offset, first.spans[i].offset);
  }
  // A cache whose span runs past its shard's end, or cut short, is not believed: the shards are
  // indexed again.
  const fs::path cache = dir / "s" / ".ringtrain_shards.tsv";
  const std::string good = file_text(cache);
  const size_t sample_line = good.find("\n0\t") + 1;  // the first sample of class 0
  ASSERT_NE(sample_line, 0u);
  const size_t offset_at = good.find('\t', good.find('\t', sample_line) + 1) + 1;
  std::ofstream(cache, std::ios::trunc) << good.substr(0, offset_at) << "999999999"
                                        << good.substr(good.find('\t', offset_at));
  EXPECT_EQ(load_record_index((dir / "s").string(), DataSource::kShards).spans[0].offset, first.spans[0].offset);
  EXPECT_EQ(file_text(cache), good) << "rewritten by the scan";
  std::ofstream(cache, std::ios::trunc) << good.substr(0, good.rfind("end\t"));
  EXPECT_EQ(load_record_index((dir / "s").string(), DataSource::kShards).files.size(), first.files.size());
  EXPECT_EQ(file_text(cache), good) << "rewritten by the scan";
  // A shard changed since: the first one rewritten with its first two samples only.
  ASSERT_TRUE(python_shards(dir / "tree", dir / "two", "--format gnu --per-shard 2"));
  fs::copy_file(dir / "two" / "part-0000.tar", dir / "s" / "part-0000.tar", fs::copy_options::overwrite_existing);
  const ImageIndex rebuilt = load_record_index((dir / "s").string(), DataSource::kShards);
  EXPECT_EQ(rebuilt.files.size(), first.files.size() - 3);
  EXPECT_EQ(rebuilt.spans[0].container, 0u);

  // An index read from before the change reads past the shard's end: the read names it.
  ImageIndex stale = first;
  SampleFiles files(stale, 0);
  try {
    files.read(4);  // the old first shard's last sample, past the new one's end
    ADD_FAILURE() << "a stale index read a sample";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("part-0000.tar:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no longer matches"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(ShardBatches, DamagedShardsAndBadMembersAreNamedAndLeftOut) {
  if (const std::string& why = testing::python_unavailable("tarfile"); !why.empty()) GTEST_SKIP() << why;
  const fs::path dir = fresh_dir("shards_bad");
  write_tree(dir / "tree", 4);  // 12 samples
  ASSERT_TRUE(python_shards(dir / "tree", dir / "s", "--format pax --per-shard 4 --classes"));
  const fs::path s = dir / "s";
  // Shard 0: sample 000001's label removed (rewritten without it), 000002's label out of range.
  {
    std::string cmd = str_cat(testing::kPython, " -c \"",
                              "import tarfile, io\n"
                              "src = tarfile.open('",
                              (s / "part-0000.tar").string(), "')\n",
                              "members = [(m, src.extractfile(m).read()) for m in src.getmembers()]\n"
                              "dst = tarfile.open('",
                              (s / "part-0000.new").string(), "', 'w', format=tarfile.GNU_FORMAT)\n",
                              "for m, data in members:\n"
                              "    if m.name == '000001.cls': continue\n"
                              "    if m.name == '000002.cls': data = b'7'; m.size = 1\n"
                              "    dst.addfile(m, io.BytesIO(data))\n"
                              "dst.close()\n\"");
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    fs::rename(s / "part-0000.new", s / "part-0000.tar");
  }
  // Shard 1: truncated inside its third sample's image.
  const TarListing whole = list_tar_members((s / "part-0001.tar").string());
  ASSERT_EQ(whole.members.size(), 8u);
  fs::resize_file(s / "part-0001.tar", whole.members[4].offset + whole.members[4].size / 2);
  // Shard 2: a corrupt image member (its bytes zeroed): found when decoded, not when indexed.
  const TarListing third = list_tar_members((s / "part-0002.tar").string());
  {
    std::fstream f(s / "part-0002.tar", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(third.members[0].offset));
    f << std::string(third.members[0].size, '\0');
  }

  const ImageIndex index = load_record_index(s.string(), DataSource::kShards);
  const std::vector<std::string>& left = index.left_out;
  ASSERT_EQ(left.size(), 3u) << (left.empty() ? "" : left[0]);
  EXPECT_TRUE(mentions(left, "part-0000.tar' member '000001.jpg'", "no label")) << left[0];
  EXPECT_TRUE(mentions(left, "part-0000.tar' member '000002.cls'", "class 7, but classes.txt lists 3")) << left[1];
  EXPECT_TRUE(mentions(left, "part-0001.tar", "truncated")) << left[2];
  EXPECT_TRUE(mentions(left, "member '000006.png'", "runs past the end")) << left[2];
  // 12 samples, less two bad members and the truncated shard's last two.
  EXPECT_EQ(index.files.size(), 8u);

  std::vector<std::string> warnings;
  std::mutex mu;
  ImageBatchOptions o = training_options(2);
  o.warn = [&](const std::string& m) {
    std::lock_guard<std::mutex> lock(mu);
    warnings.push_back(m);
  };
  IndexedImageBatches source(index, o);
  one_pass(source, 0, every(index.files.size()), 2);
  EXPECT_EQ(source.skipped(), 1);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(s.string() + "/part-0002.tar:000008.png"), std::string::npos) << warnings[0];
  o.error_on_bad_file = true;
  IndexedImageBatches strict(index, o);
  try {
    one_pass(strict, 0, every(index.files.size()), 2);
    ADD_FAILURE() << "data.on_bad_file = \"error\" went past a corrupt member";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("part-0002.tar:000008.png"), std::string::npos) << e.what();
  }

  // Without classes.txt a label is judged against the model's classes.
  fs::remove(s / "classes.txt");
  ImageIndex unlisted = load_record_index(s.string(), DataSource::kShards);
  EXPECT_EQ(unlisted.classes.size(), 8u);  // "0" to "7"
  leave_out_labels_from(unlisted, 3);
  EXPECT_EQ(unlisted.classes.size(), 3u);
  EXPECT_EQ(unlisted.files.size(), 8u);
  EXPECT_TRUE(mentions(unlisted.left_out, "part-0000.tar:000002.png", "class 7, but the model has 3 classes"));
  fs::remove_all(dir);
}

TEST(ShardBatches, AFolderWithoutShardsOrSamplesIsRefusedNamingIt) {
  const fs::path dir = fresh_dir("shards_none");
  try {
    load_record_index(dir.string(), DataSource::kShards);
    ADD_FAILURE() << "an empty folder was indexed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no .tar shards"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "junk.tar") << std::string(1024, 'x');
  try {
    load_record_index(dir.string(), DataSource::kShards);
    ADD_FAILURE() << "a shard of junk was indexed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fails its checksum"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// tests/data/write_tfrecords.py ROOT OUT args...; false where it failed.
bool python_tfrecords(const fs::path& root, const fs::path& out, const std::string& args) {
  const std::string cmd = str_cat(testing::kPython, " " RT_SOURCE_DIR "/tests/data/write_tfrecords.py ", root.string(),
                                  " ", out.string(), " ", args);
  return std::system(cmd.c_str()) == 0;
}

TEST(TfRecordBatches, PythonWrittenExamplesGiveTheFolderBatchesOpeningEachFileOncePerPass) {
  if (const std::string& why = testing::python_unavailable("google.protobuf, crcmod"); !why.empty())
    GTEST_SKIP() << why;
  const fs::path dir = fresh_dir("tfrecord_same");
  write_tree(dir / "tree", 8);
  ASSERT_TRUE(python_tfrecords(dir / "tree", dir / "tfr", "--per-file 5"));
  std::ofstream(dir / "tfr" / "train-00000-of-00005.idx") << "0 1\n";  // DALI's index beside: not a record file
  const ImageIndex folder = load_image_index((dir / "tree").string());
  ImageIndex records = load_record_index((dir / "tfr").string(), DataSource::kTfRecord);
  ASSERT_EQ(records.files.size(), folder.files.size());
  EXPECT_EQ(records.containers.size(), 5u);
  EXPECT_TRUE(records.left_out.empty());
  EXPECT_EQ(records.files[1], "offset " + std::to_string(records.spans[1].offset));
  leave_out_labels_from(records, 3);  // numbered classes, as many as the model's
  EXPECT_EQ(records.classes.size(), 3u);
  const ImageIndex cached = load_record_index((dir / "tfr").string(), DataSource::kTfRecord);
  EXPECT_EQ(cached.spans.size(), records.spans.size());
  EXPECT_EQ(cached.source, DataSource::kTfRecord);

  const std::vector<int64_t> order = {5, 0, 23, 17, 9, 12, 3, 20, 1, 14, 7, 22, 2, 4, 6, 8};
  IndexedImageBatches want(folder, training_options(2));
  ImageBatchOptions o = training_options(3);
  o.label_offset = 1;  // TensorFlow's ImageNet labels, 1-based
  IndexedImageBatches got(records, o);
  for (int64_t epoch : {0, 1}) {
    const int64_t opened = got.files_opened();
    const Pass a = one_pass(want, epoch, order, 4), b = one_pass(got, epoch, order, 4);
    EXPECT_EQ(a.images, b.images) << "epoch " << epoch;
    EXPECT_EQ(a.labels, b.labels) << "epoch " << epoch;
    std::vector<uint32_t> read;
    for (int64_t i : order) read.push_back(records.spans[static_cast<size_t>(i)].container);
    std::sort(read.begin(), read.end());
    EXPECT_EQ(got.files_opened() - opened, std::unique(read.begin(), read.end()) - read.begin());
  }
  fs::remove_all(dir);
}

TEST(TfRecordBatches, BadCrcsLabelsAndTruncationAreNamedByFileAndOffset) {
  if (const std::string& why = testing::python_unavailable("google.protobuf, crcmod"); !why.empty())
    GTEST_SKIP() << why;
  const fs::path dir = fresh_dir("tfrecord_bad");
  write_tree(dir / "tree", 4);  // 12 samples, 4 per file
  ASSERT_TRUE(python_tfrecords(dir / "tree", dir / "tfr", "--per-file 4"));
  const fs::path first = dir / "tfr" / "train-00000-of-00003", last = dir / "tfr" / "train-00002-of-00003";
  const TfRecordListing one = list_tfrecords(first.string()), three = list_tfrecords(last.string());
  ASSERT_EQ(one.offsets.size(), 4u);
  // A byte of record 1's data flipped: its data CRC fails when it is read.
  {
    std::fstream f(first, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(one.offsets[1] + 40));
    f.put('\x5a');
  }
  // The last file cut inside its last record.
  fs::resize_file(last, three.offsets[3] + 20);
  ImageIndex index = load_record_index((dir / "tfr").string(), DataSource::kTfRecord);
  ASSERT_EQ(index.left_out.size(), 1u);
  EXPECT_TRUE(mentions(index.left_out, str_cat("offset ", three.offsets[3], " of '", last.string()), "truncated"))
      << index.left_out[0];
  EXPECT_EQ(index.files.size(), 11u);
  leave_out_labels_from(index, 3);

  std::vector<std::string> warnings;
  std::mutex mu;
  ImageBatchOptions o = training_options(1);
  o.label_offset = 0;  // so class2's stored label 3 is past the 3 classes
  o.warn = [&](const std::string& m) {
    std::lock_guard<std::mutex> lock(mu);
    warnings.push_back(m);
  };
  IndexedImageBatches source(index, o);
  one_pass(source, 0, every(index.files.size()), 1);
  const std::string crc_name = str_cat(first.string(), ":offset ", one.offsets[1]);
  EXPECT_TRUE(mentions(warnings, crc_name, "fails its CRC")) << crc_name;
  EXPECT_TRUE(mentions(warnings, "image/class/label 3 less data.label_offset 0 is 3", "not a class (0 to 2)"));
  EXPECT_EQ(source.skipped(), 1 + 3);  // the damaged record, and class2's three whole ones
  o.error_on_bad_file = true;
  IndexedImageBatches strict(index, o);
  try {
    one_pass(strict, 0, every(index.files.size()), 1);
    ADD_FAILURE() << "data.on_bad_file = \"error\" went past a record whose CRC fails";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(crc_name), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// The wire format's corners that Python's writer does not produce: an unpacked int64 list, fields
// in any order and unknown fields between; and malformed messages refused, not overread.
TEST(TfExample, ReadsUnpackedLabelsAndUnknownFieldsAndRefusesMalformedMessages) {
  const auto len = [](int field, const std::string& body) {
    std::string out(1, static_cast<char>(field << 3 | 2));
    out += static_cast<char>(body.size());  // bodies here are under 128 bytes
    return out + body;
  };
  const std::string label_feature = len(3, std::string("\x08\x05", 2));       // Int64List, value 5 unpacked
  const std::string image_feature = len(1, len(1, "IMG"));                    // BytesList, value "IMG"
  const std::string unknown = std::string("\x28\x96\x01", 3) + len(9, "zz");  // field 5 varint, field 9 bytes
  const std::string features = len(1, len(2, label_feature) + len(1, "image/class/label")) + unknown +
                               len(1, len(1, "image/encoded") + len(2, image_feature));
  const std::string example = unknown + len(1, features);
  const auto bytes = [](const std::string& s) {
    return std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  const ImageExample ex = parse_image_example(bytes(example), "x");
  EXPECT_EQ(ex.label, 5);
  EXPECT_EQ(std::string(ex.image.begin(), ex.image.end()), "IMG");
  for (size_t cut = 1; cut < example.size(); ++cut) {
    try {
      parse_image_example(bytes(example.substr(0, cut)), "cut");
      ADD_FAILURE() << "a message cut at byte " << cut << " was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cut: "), std::string::npos) << e.what();
    }
  }
  // Framing: the record as base/tfrecord.h writes it reads back; a changed byte fails a CRC.
  std::string framed = tfrecord(example);
  EXPECT_EQ(parse_image_example(tfrecord_data(bytes(framed), "f"), "f").label, 5);
  framed[framed.size() - 6] ^= 1;
  EXPECT_THROW(tfrecord_data(bytes(framed), "f"), Error);
}

// Headers a broken or hostile tar may hold stop the listing with a message naming the file and
// the offset, never a loop or an allocation of what a size field claims.
TEST(TarMembers, HugeSizesAndMalformedPaxHeadersAreDamageNamingTheOffset) {
  const fs::path dir = fresh_dir("tar_malformed");
  // A ustar header for `name` of type `type` whose size field is `size` (12 bytes as given).
  const auto header = [](const std::string& name, char type, const std::string& size) {
    std::string h(512, '\0');
    h.replace(0, name.size(), name);
    h.replace(100, 7, "0000644");
    std::string field = size;
    field.resize(12, '\0');
    h.replace(124, 12, field);
    h[156] = type;
    h.replace(257, 8,
              std::string("ustar\0"
                          "00",
                          8));
    h.replace(148, 8, "        ");
    unsigned sum = 0;
    for (char c : h) sum += static_cast<unsigned char>(c);
    char digits[8];
    std::snprintf(digits, sizeof digits, "%06o", sum);
    h.replace(148, 7, std::string(digits, 7));
    return h;
  };
  const auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return list_tar_members((dir / name).string());
  };
  // GNU base-256: 0xFFFF...FE00 bytes, which a sum of offset and size would wrap back to here.
  const std::string huge("\x80\0\0\0\xff\xff\xff\xff\xff\xff\xfe\x00", 12);
  TarListing l = write("huge.tar", header("a.jpg", '0', huge) + std::string(1024, '\0'));
  EXPECT_TRUE(l.members.empty());
  EXPECT_NE(l.damage.find("runs past the end"), std::string::npos) << l.damage;
  EXPECT_NE(l.damage.find("offset 0 of"), std::string::npos) << l.damage;
  // More than 64 bits of base-256 size.
  l = write("wide.tar",
            header("a.jpg", '0', std::string("\x80\x01\0\0\0\0\0\0\0\0\0\0", 12)) + std::string(1024, '\0'));
  EXPECT_NE(l.damage.find("no readable size"), std::string::npos) << l.damage;
  // PAX records whose lengths would go backwards, or are not digits, or do not end a record.
  for (const std::string& pax :
       {std::string("6 a=b\n5 a=\n-5 x\n"), std::string("x path=a\n"), std::string("9 path=abc")}) {
    std::string body = pax;
    body.resize((body.size() + 511) / 512 * 512, '\0');
    char size[12];
    std::snprintf(size, sizeof size, "%011o", static_cast<unsigned>(pax.size()));
    l = write("pax.tar", header("PaxHeader", 'x', std::string(size, 12)) + body + header("a.jpg", '0', "00000000001") +
                             std::string(512, 'x') + std::string(1024, '\0'));
    EXPECT_TRUE(l.members.empty()) << pax;
    EXPECT_NE(l.damage.find("the PAX header at offset 0"), std::string::npos) << l.damage;
  }
  // A PAX size that is not a number.
  const std::string bad_size = "13 size=-512\n";
  std::string body = bad_size;
  body.resize(512, '\0');
  l = write("pax_size.tar", header("PaxHeader", 'x', "00000000015") + body + header("a.jpg", '0', "00000000001") +
                                std::string(512, 'x') + std::string(1024, '\0'));
  EXPECT_NE(l.damage.find("is malformed"), std::string::npos) << l.damage;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rt
