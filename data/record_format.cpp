#include "data/record_format.h"

#include "base/check.h"

namespace rt {

extern const RecordFormat kTarRecords;       // tar_records.cpp
extern const RecordFormat kTfRecordRecords;  // tfrecord_records.cpp

namespace {
const RecordFormat* const kFormats[] = {&kTarRecords, &kTfRecordRecords};
}  // namespace

const RecordFormat& record_format(DataSource source) {
  for (const RecordFormat* f : kFormats)
    if (f->source == source) return *f;
  throw Error(str_cat("data.source = \"", name_of(source), "\" has no record format"));
}

const RecordFormat* record_format_of_header(const std::string& line) {
  for (const RecordFormat* f : kFormats)
    if (line == f->cache_header) return f;
  return nullptr;
}

}  // namespace rt
