// Every setting's name table (base/run_settings.h) against its enum: one distinct name per
// enumerator, each reading back as itself, and a word outside the table reading as nothing.
#include "base/run_settings.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace rt {
namespace {

template <typename E>
void expect_names_read_back(size_t enumerators) {
  const auto names = names_of<E>();
  ASSERT_EQ(names.size(), enumerators);
  EXPECT_EQ(std::set<std::string_view>(names.begin(), names.end()).size(), names.size()) << "a name twice";
  for (size_t i = 0; i < enumerators; ++i) {
    const E value = static_cast<E>(i);
    EXPECT_EQ(name_of(value), names[i]);
    EXPECT_EQ(enum_named<E>(name_of(value)), value) << names[i];
    EXPECT_EQ(enum_named<E>(std::string(names[i]) + "x"), std::nullopt) << names[i];
  }
  EXPECT_EQ(enum_named<E>(""), std::nullopt);
}

TEST(RunSettings, EveryNameReadsBackAsItsValue) {
  expect_names_read_back<DataSource>(5);
  expect_names_read_back<TailPolicy>(2);
  expect_names_read_back<BadFilePolicy>(2);
  expect_names_read_back<JpegDecode>(3);
  expect_names_read_back<Device>(2);
  expect_names_read_back<ConvAlgorithm>(2);
  expect_names_read_back<Precision>(4);
  expect_names_read_back<CudnnGraphUse>(3);
  expect_names_read_back<ScheduleKind>(4);
  expect_names_read_back<OptimizerKind>(2);
  expect_names_read_back<Allreduce>(3);
  expect_names_read_back<TransportChoice>(4);
  expect_names_read_back<Hierarchy>(3);
  expect_names_read_back<Wire>(3);
  expect_names_read_back<ProgressMode>(4);
}

TEST(RunSettings, NamesAreTheConfigFilesSpellings) {
  EXPECT_EQ(name_of(DataSource::kImageFolder), "imagefolder");
  EXPECT_EQ(name_of(DataSource::kShards), "shards");
  EXPECT_EQ(name_of(DataSource::kTfRecord), "tfrecord");
  EXPECT_EQ(name_of(CudnnGraphUse::kNever), "off");
  EXPECT_EQ(name_of(Hierarchy::kTwoLevel), "two_level");
  EXPECT_EQ(enum_named<Precision>("bf16"), Precision::kBf16);
  EXPECT_EQ(enum_named<Wire>("fp16"), Wire::kFp16);
}

}  // namespace
}  // namespace rt
