#include "data/batch_source.h"

#include <span>

#include "base/check.h"
#include "data/batch.h"

namespace rt {

void InMemoryBatches::start(int64_t /*epoch*/, std::vector<int64_t> indices, int64_t batch) {
  RT_CHECK(batch >= 1 && static_cast<int64_t>(indices.size()) % batch == 0, "a pass of ", indices.size(),
           " samples is not whole batches of ", batch);
  indices_ = std::move(indices);
  batch_ = batch;
  delivered_ = 0;
}

double InMemoryBatches::next(float* images, int32_t* labels) {
  RT_CHECK((delivered_ + 1) * batch_ <= static_cast<int64_t>(indices_.size()), "no batch left in this pass");
  gather_batch(
      data_,
      std::span<const int64_t>(indices_).subspan(static_cast<size_t>(delivered_ * batch_), static_cast<size_t>(batch_)),
      images, labels);
  ++delivered_;
  return 0;
}

}  // namespace rt
