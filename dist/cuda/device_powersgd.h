// PowerSGD with its phases on a GPU (Note [PowerSGD on the GPU] in dist/powersgd_buckets.h).
// Plain C++: the trainer includes it without the CUDA headers.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "dist/powersgd_buckets.h"

namespace rt {

// PowerSgdBuckets whose state lives on the selected GPU and whose average() enqueues the phases on
// the communication stream of a collective on GPU memory (rt::Error from average() for another).
// rt::Error in a build without CUDA.
std::unique_ptr<PowerSgdBuckets> make_device_powersgd(const std::vector<ParamExtent>& params,
                                                      const std::vector<std::vector<int64_t>>& shapes,
                                                      const std::vector<Bucket>& buckets,
                                                      const PowerSgdOptions& options);

// The two phases whose bits every rank must share, on GPU memory and the compute stream, for the
// parity test against dist/powersgd.h's host loops; and the products' time. Built with CUDA only,
// but products_seconds, which says so without it.
namespace powersgd_kernels {
void orthonormalize_columns(float* a, int64_t rows, int64_t k);
// PowerSgdMatrix::decompress; returns when done.
std::pair<double, double> decompress(const PowerSgdMatrix& x, const float* p, const float* q, float* grad,
                                     float* error);

// The products of one n x m gradient at rank k on the selected GPU, as average() enqueues them
// without the averages (the error added in, Q and P orthonormalized, P = M Q, Q = M^T P, P Q^T
// and the error), timed with CUDA events on a stream of their own: the median of `runs`, in
// seconds. For bench/powersgd_products --gpu.
double products_seconds(int64_t n, int64_t m, int64_t k, int runs);
}  // namespace powersgd_kernels

}  // namespace rt
