// Copy chosen samples of a LabeledImages into caller-owned contiguous batch buffers.
// gather_batch writes indices.size() samples in the given order: images_out as plain NCHW
// (indices.size() * sample_size() floats) and labels_out (indices.size() int32); every index is
// checked against src.count first, so on error nothing has been written.
#pragma once

#include <cstdint>
#include <span>

#include "data/labeled_images.h"

namespace rt {

void gather_batch(const LabeledImages& src, std::span<const int64_t> indices, float* images_out, int32_t* labels_out);

}  // namespace rt
