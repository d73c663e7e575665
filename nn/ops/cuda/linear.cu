// Fully connected on cuBLAS. cuBLAS is column-major: a row-major (R, C) matrix is its (C, R)
// transpose, so y (N, O) = x w^T is computed as y^T (O, N) = w^T(col) x^T(col), and likewise
// for the gradients. Bias and its gradient are kernels of ours. Each product names its compute
// type, so TF32 is a property of the op (its PlanContext), not of the shared cuBLAS handle.
#include "base/check.h"
#include "nn/cuda/cublas_library.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/make.h"
#include "nn/ops/cuda/scaling.h"

namespace rt::cuda {
namespace {

// C (m, n) = op(A) op(B) on column-major float32 matrices, beta = 0.
void gemm(cublasComputeType_t compute, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* a,
          int lda, const float* b, int ldb, float* c, int ldc) {
  RT_CU(cublas().gemm_ex(context().cublas, ta, tb, m, n, k, &kOne, a, CUDA_R_32F, lda, b, CUDA_R_32F, ldb, &kZero, c,
                         CUDA_R_32F, ldc, compute, CUBLAS_GEMM_DEFAULT));
}

__global__ void add_bias(const float* b, int64_t N, int64_t O, float* y) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < N * O; e += int64_t{gridDim.x} * blockDim.x)
    y[e] += b[e % O];
}

// db[o] = sum over the batch of dy[n, o]; one thread per output feature, in batch order.
__global__ void bias_gradient(const float* dy, int64_t N, int64_t O, float* db) {
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < O; o += int64_t{gridDim.x} * blockDim.x) {
    float s = 0;
    for (int64_t n = 0; n < N; ++n) s += dy[n * O + o];
    db[o] = s;
  }
}

class CudaLinear final : public LinearOp {
 public:
  CudaLinear(int64_t n, int64_t in, int64_t out, bool need_dx, Precision precision)
      : n_(static_cast<int>(n)),
        in_(static_cast<int>(in)),
        out_(static_cast<int>(out)),
        need_dx_(need_dx),
        compute_(allows_tf32(precision) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F_PEDANTIC) {
    context();
  }

  void forward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) override {
    gemm(compute_, CUBLAS_OP_T, CUBLAS_OP_N, out_, n_, in_, w.data(), in_, x.data(), in_, y.data(), out_);
    if (b) {
      const Context& c = context();
      add_bias<<<blocks_for(int64_t{n_} * out_), 256, 0, c.stream>>>(b->data(), n_, out_, y.data());
      RT_CU_LAUNCHED();
    }
  }

  void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    RT_CHECK(need_dx_, "linear was planned without backward-data");
    gemm(compute_, CUBLAS_OP_N, CUBLAS_OP_N, in_, n_, out_, w.data(), in_, dy.data(), out_, dx.data(), in_);
  }

  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* db) override {
    gemm(compute_, CUBLAS_OP_N, CUBLAS_OP_T, in_, out_, n_, x.data(), in_, dy.data(), out_, dw.data(), in_);
    if (db) {
      const Context& c = context();
      bias_gradient<<<blocks_for(out_), 256, 0, c.stream>>>(dy.data(), n_, out_, db->data());
      RT_CU_LAUNCHED();
    }
  }

 private:
  int n_, in_, out_;
  bool need_dx_;
  cublasComputeType_t compute_;
};

}  // namespace

std::unique_ptr<LinearOp> make_linear(int64_t batch, int64_t in_features, int64_t out_features, bool, bool need_dx,
                                      const PlanContext& plan) {
  return std::make_unique<CudaLinear>(batch, in_features, out_features, need_dx, plan.precision);
}

}  // namespace rt::cuda
