// Scratch buffers that live only inside one CPU op's call, shared by every op of the process.
//
// Note [Shared scratch]: staged layouts, transformed tiles, laid-out rows: an op's temporaries live
// only while it runs, and ops run one at a time (each parallel inside itself), so all ops share one
// buffer per use, grown at plan time to the largest any op asks for and never during a step. An op
// that needs several at once takes distinct uses. The memory is allocate_host_zeroed's: huge pages
// from 2 MiB on (Note [Huge pages for large buffers]).
#pragma once

#include <cstddef>

namespace rt::cpu {

enum class ScratchUse : int {
  kStaging0,  // Staging's slots 0 to 2 (dnnl_util.h)
  kStaging1,
  kStaging2,
  kWinogradTiles,          // the bf16 Winograd's V (Note [bf16 Winograd])
  kWinogradProducts,       // its M (float32) or dM (bf16)
  kWinogradFilters,        // its U (bf16) or dU (float32)
  kWeightGradientRows,     // the 1x1 weight gradient's dY rows (Note [1x1 weight gradient as a product])
  kWeightGradientColumns,  // and its X in pair panels
  kCount
};

// Grows `use`'s buffer to at least `bytes`, its contents dropped; at plan time only.
void reserve_scratch(ScratchUse use, size_t bytes);
// `use`'s buffer (64-byte aligned), as large as the largest reservation; null before any.
void* scratch(ScratchUse use);
template <class T>
T* scratch_as(ScratchUse use) {
  return static_cast<T*>(scratch(use));
}

}  // namespace rt::cpu
