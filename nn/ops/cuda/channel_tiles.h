// The walk of a per-channel kernel over an NHWC tensor seen as a (rows, C) matrix, rows = N x H x W:
// a convolution's bias added to its 16-bit output, and the bias gradient summed from its dy.
// Blocks are kLanes consecutive channels by kRowThreads rows, so the 32 lanes of a warp read 32
// neighbouring elements of one row, and slices of blocks along the rows keep the GPU busy where C
// is small. (One block per channel, walking a channel's elements C apart, took milliseconds per
// VGG-16 layer.) No index division anywhere. Plain C++ with RT_HD, so the walk and the sums are
// tested on the host by playing every thread of a grid (tests/nn/cuda_math_test.cpp).
#pragma once

#include <cstdint>

#include "base/host_device.h"
#include "nn/ops/cuda/element_io.cuh"

namespace rt::cuda {

struct ChannelTiles {
  static constexpr int kLanes = 32;      // threads along C in a block (blockDim.x)
  static constexpr int kRowThreads = 8;  // threads along the rows in a block (blockDim.y)

  int64_t rows = 0, C = 0;
  int64_t slices = 1;  // blocks along the rows (gridDim.y); gridDim.x is tiles()

  // Enough slices for about kTargetBlocks blocks in all, each thread walking at least
  // kMinRowsPerThread rows where there are that many. The rule depends on the shape alone, so a
  // sum's rounding is the same on every GPU.
  static constexpr int64_t kTargetBlocks = 1024, kMinRowsPerThread = 32;
  static ChannelTiles of(int64_t rows, int64_t C) {
    ChannelTiles t{rows, C, 1};
    const int64_t by_rows = (rows + kRowThreads * kMinRowsPerThread - 1) / (kRowThreads * kMinRowsPerThread);
    const int64_t by_blocks = (kTargetBlocks + t.tiles() - 1) / t.tiles();
    t.slices = by_rows < by_blocks ? by_rows : by_blocks;
    if (t.slices < 1) t.slices = 1;
    return t;
  }

  RT_HD int64_t tiles() const { return (C + kLanes - 1) / kLanes; }
  // Thread (lane, row_thread) of block (tile, slice) holds channel `channel(tile, lane)` (none
  // where that is >= C) and walks rows first_row(slice, row_thread) + k x row_stride().
  RT_HD int64_t channel(int64_t tile, int64_t lane) const { return tile * kLanes + lane; }
  RT_HD int64_t first_row(int64_t slice, int64_t row_thread) const { return slice * kRowThreads + row_thread; }
  RT_HD int64_t row_stride() const { return slices * kRowThreads; }

  // A sum over several slices leaves one partial sum per (slice, channel): the walk that adds
  // those up, in one slice.
  ChannelTiles of_partials() const { return ChannelTiles{slices, C, 1}; }
};

// One thread's share of channel c's sum over its rows, in float32; 0 past C. Four independent
// partial sums, so four loads are in flight at once.
template <typename T>
RT_HD float column_share(const ChannelTiles& t, const T* x, int64_t c, int64_t slice, int64_t row_thread) {
  if (c >= t.C) return 0.0f;
  const int64_t stride = t.row_stride();
  float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  int64_t r = t.first_row(slice, row_thread);
  for (; r + 3 * stride < t.rows; r += 4 * stride)
    for (int k = 0; k < 4; ++k) s[k] += load(&x[(r + k * stride) * t.C + c]);
  for (int k = 0; r < t.rows; r += stride, ++k) s[k] += load(&x[r * t.C + c]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// Channel c's sum over one slice's rows: its row threads' shares added in order, as the kernel
// adds them from shared memory.
template <typename T>
RT_HD float slice_sum(const ChannelTiles& t, const T* x, int64_t c, int64_t slice) {
  float s = 0.0f;
  for (int k = 0; k < ChannelTiles::kRowThreads; ++k) s += column_share(t, x, c, slice, k);
  return s;
}

// One thread's part of y += b per channel: its rows of channel c.
template <typename T>
RT_HD void add_to_column(const ChannelTiles& t, float b, T* y, int64_t c, int64_t slice, int64_t row_thread) {
  if (c >= t.C) return;
  for (int64_t r = t.first_row(slice, row_thread); r < t.rows; r += t.row_stride()) {
    T* at = &y[r * t.C + c];
    store(at, load(at) + b);
  }
}

}  // namespace rt::cuda
