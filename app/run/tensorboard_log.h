// log.tensorboard: rank 0's metric records (app/run/run_folder.h) also as TensorBoard scalars, in an
// event file of their own in checkpoint.dir (formats/tfevents.h). Each number of a record is one
// scalar, tagged "<kind>/<field>" ("step/loss", "epoch/test_top1"), at the record's step;
// "kind", "step", "epoch" and "images_seen" say where the record belongs and are not drawn. So
// TensorBoard shows what metrics.jsonl holds, field for field, and a field added to a record
// appears in both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/json.h"
#include "formats/tfevents.h"

namespace rt {

class TensorBoardLog {
 public:
  // A new event file in `dir` (never an older one, whose last record a kill may have cut short),
  // whose records after the file version start with a session start at `first_step`, the first
  // step this run logs: TensorBoard then drops what earlier files hold from that step on, the
  // steps that a run which stopped logged after its last checkpoint.
  TensorBoardLog(const std::string& dir, int64_t first_step);
  // The record's scalars as one event, one record of the file.
  void write(const Json& record) const;
  const std::string& path() const { return file_.path(); }

 private:
  EventFile file_;
};

// The scalars of one metric record, in the record's order.
std::vector<Scalar> scalars_of(const Json& record);

}  // namespace rt
