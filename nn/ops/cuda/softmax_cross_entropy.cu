// Softmax cross-entropy with one thread per sample, each running softmax_cross_entropy_row (the
// CPU-tested function) in double. Rows are few (the batch) and the per-row work is small, so this
// is not where a step's time goes.
#include <vector>

#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/make.h"
#include "nn/ops/elementwise_math.h"

namespace rt::cuda {
namespace {

struct RowResult {
  double loss;
  int64_t above;
};

__global__ void softmax_cross_entropy_rows(const float* z, const int32_t* targets, int64_t N, int64_t K,
                                           double smoothing, double g, float* dz, RowResult* rows) {
  for (int64_t n = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; n < N; n += int64_t{gridDim.x} * blockDim.x)
    softmax_cross_entropy_row(z + n * K, K, targets[n], smoothing, g, dz ? dz + n * K : nullptr, &rows[n].loss,
                              &rows[n].above);
}

}  // namespace

LossResult softmax_cross_entropy(const Tensor& logits, const int32_t* targets, double label_smoothing,
                                 Tensor* dlogits, double grad_scale) {
  const int64_t N = logits.dim(0), K = logits.dim(1);
  // Scratch: the targets, then one RowResult per row.
  const size_t target_bytes = (static_cast<size_t>(N) * sizeof(int32_t) + 15) / 16 * 16;
  char* s = static_cast<char*>(scratch(target_bytes + static_cast<size_t>(N) * sizeof(RowResult)));
  auto* d_targets = reinterpret_cast<int32_t*>(s);
  auto* d_rows = reinterpret_cast<RowResult*>(s + target_bytes);
  const cudaStream_t stream = context().stream;
  RT_CU(cudaMemcpyAsync(d_targets, targets, static_cast<size_t>(N) * sizeof(int32_t), cudaMemcpyHostToDevice, stream));
  softmax_cross_entropy_rows<<<blocks_for(N, 64), 64, 0, stream>>>(
      logits.data(), d_targets, N, K, label_smoothing, grad_scale / static_cast<double>(N),
      dlogits ? dlogits->data() : nullptr, d_rows);
  RT_CU_LAUNCHED();
  std::vector<RowResult> rows(static_cast<size_t>(N));
  RT_CU(cudaMemcpyAsync(rows.data(), d_rows, rows.size() * sizeof(RowResult), cudaMemcpyDeviceToHost, stream));
  RT_CU(cudaStreamSynchronize(stream));
  LossResult r;
  double total = 0;
  for (const RowResult& row : rows) {
    total += row.loss;
    r.correct1 += row.above == 0;
    r.correct5 += row.above < 5;
  }
  r.loss = total / static_cast<double>(N);
  return r;
}

}  // namespace rt::cuda
