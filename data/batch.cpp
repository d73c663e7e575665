// gather_batch: one memcpy per sample. Single-threaded on purpose: it is memory-bound and small
// next to a training step (a 256-image Fashion-MNIST batch is 0.8 MB).
#include "data/batch.h"

#include <cstring>

#include "base/check.h"

namespace rt {

void gather_batch(const LabeledImages& src, std::span<const int64_t> indices, float* images_out, int32_t* labels_out) {
  for (size_t i = 0; i < indices.size(); ++i) {
    RT_CHECK(indices[i] >= 0 && indices[i] < src.count, "gather_batch: index ", indices[i], " at batch position ", i,
             " is outside the dataset's ", src.count, " samples");
  }
  RT_CHECK(indices.empty() || (images_out != nullptr && labels_out != nullptr),
           "gather_batch: output buffers must not be null");
  const int64_t size = src.sample_size();
  for (size_t i = 0; i < indices.size(); ++i) {
    std::memcpy(images_out + static_cast<int64_t>(i) * size, src.pixels.data() + indices[i] * size,
                static_cast<size_t>(size) * sizeof(float));
    labels_out[i] = src.labels[indices[i]];
  }
}

}  // namespace rt
