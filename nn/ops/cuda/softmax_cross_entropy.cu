// Softmax cross-entropy with one thread per sample, each running softmax_cross_entropy_row (the
// CPU-tested function) in double. Rows are few (the batch) and the per-row work is small, so this
// is not where a step's time goes. The planned op (SoftmaxCrossEntropyOp) keeps its targets and
// rows in memory of its own, so its compute enqueues the same work every step and can be recorded
// with the step; the free function uses the shared scratch.
#include <vector>

#include "nn/cuda/device_api.h"
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

// Enqueues the rows' losses and ranks into d_rows and their copy into host_rows (N of each).
void enqueue_rows(const Tensor& logits, const int32_t* d_targets, double label_smoothing, Tensor* dlogits,
                  double grad_scale, RowResult* d_rows, RowResult* host_rows) {
  const int64_t N = logits.dim(0), K = logits.dim(1);
  const cudaStream_t stream = context().stream;
  softmax_cross_entropy_rows<<<blocks_for(N, 64), 64, 0, stream>>>(logits.data(), d_targets, N, K, label_smoothing,
                                                                   grad_scale / static_cast<double>(N),
                                                                   dlogits ? dlogits->data() : nullptr, d_rows);
  RT_CU_LAUNCHED();
  RT_CU(cudaMemcpyAsync(host_rows, d_rows, static_cast<size_t>(N) * sizeof(RowResult), cudaMemcpyDeviceToHost, stream));
}

// After the stream has finished enqueue_rows: the mean loss and the top-1 / top-5 counts.
LossResult sum_rows(const RowResult* rows, int64_t N) {
  LossResult r;
  double total = 0;
  for (int64_t n = 0; n < N; ++n) {
    total += rows[n].loss;
    r.correct1 += rows[n].above == 0;
    r.correct5 += rows[n].above < 5;
  }
  r.loss = total / static_cast<double>(N);
  return r;
}

class CudaSoftmaxCrossEntropy final : public SoftmaxCrossEntropyOp {
 public:
  explicit CudaSoftmaxCrossEntropy(const TensorSpec& logits)
      : SoftmaxCrossEntropyOp(logits),
        N_(logits.shape[0]),
        targets_(allocate_zeroed(static_cast<size_t>(N_) * sizeof(int32_t))),
        rows_(allocate_zeroed(static_cast<size_t>(N_) * sizeof(RowResult))),
        host_rows_(allocate_pinned(static_cast<size_t>(N_) * sizeof(RowResult))) {}

 protected:
  // From pageable memory: the call returns once the labels are staged, so the caller may reuse them.
  void set_targets_impl(const int32_t* targets) override {
    RT_CU(cudaMemcpyAsync(targets_.get(), targets, static_cast<size_t>(N_) * sizeof(int32_t), cudaMemcpyHostToDevice,
                          context().stream));
  }
  void compute_impl(const Tensor& logits, double label_smoothing, Tensor* dlogits, double grad_scale) override {
    enqueue_rows(logits, static_cast<const int32_t*>(targets_.get()), label_smoothing, dlogits, grad_scale,
                 static_cast<RowResult*>(rows_.get()), host_rows());
  }
  LossResult result_impl() override {
    RT_CU(cudaStreamSynchronize(context().stream));
    return sum_rows(host_rows(), N_);
  }

 private:
  RowResult* host_rows() const { return static_cast<RowResult*>(host_rows_.get()); }

  int64_t N_;
  std::shared_ptr<void> targets_;    // (N) int32 on the GPU
  std::shared_ptr<void> rows_;       // (N) RowResult on the GPU
  std::shared_ptr<void> host_rows_;  // (N) RowResult, page-locked: the copy is part of the recorded work
};

}  // namespace

LossResult softmax_cross_entropy(const Tensor& logits, const int32_t* targets, double label_smoothing, Tensor* dlogits,
                                 double grad_scale) {
  const int64_t N = logits.dim(0);
  // Scratch: the targets, then one RowResult per row.
  const size_t target_bytes = (static_cast<size_t>(N) * sizeof(int32_t) + 15) / 16 * 16;
  char* s = static_cast<char*>(scratch(target_bytes + static_cast<size_t>(N) * sizeof(RowResult)));
  auto* d_targets = reinterpret_cast<int32_t*>(s);
  auto* d_rows = reinterpret_cast<RowResult*>(s + target_bytes);
  const cudaStream_t stream = context().stream;
  RT_CU(cudaMemcpyAsync(d_targets, targets, static_cast<size_t>(N) * sizeof(int32_t), cudaMemcpyHostToDevice, stream));
  std::vector<RowResult> rows(static_cast<size_t>(N));
  enqueue_rows(logits, d_targets, label_smoothing, dlogits, grad_scale, d_rows, rows.data());
  RT_CU(cudaStreamSynchronize(stream));
  return sum_rows(rows.data(), N);
}

std::unique_ptr<SoftmaxCrossEntropyOp> make_softmax_cross_entropy(const TensorSpec& logits) {
  return std::make_unique<CudaSoftmaxCrossEntropy>(logits);
}

}  // namespace rt::cuda
