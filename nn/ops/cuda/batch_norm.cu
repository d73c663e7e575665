// Batch norm on cuDNN's spatial mode, which keeps the batch mean and inverse standard deviation
// for backward and updates the running statistics as PyTorch does (unbiased running variance).
// cuDNN has no backward for the inference forward; that one is a kernel of ours. It runs on its
// input's layout: 16-bit NHWC under mixed precision, with gamma, beta and the statistics float32
// (what cuDNN requires of 16-bit inputs).
//
// Training goes through the "Ex" calls. On NHWC they take the persistent spatial mode, as PyTorch
// does for channels_last: on an H100 the plain spatial mode's 16-bit NHWC backward measured 10 to
// 24 times slower than float32 NCHW's (ResNet-101, batch 64). The persistent mode reduces in
// scaled integers and can overflow to NaN on huge inputs; fp16's finite check catches that as
// any other overflow.
#include "base/check.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/descriptors.h"
#include "nn/ops/cuda/element_io.cuh"
#include "nn/ops/cuda/make.h"
#include "nn/ops/cuda/scaling.h"

namespace rt::cuda {
namespace {

constexpr int kThreads = 256;

// One block per channel: dbeta = sum dy, dgamma = sum dy (x - mean) / sd, dx = dy gamma / sd.
template <typename T>
__global__ void batch_norm_backward_constant_stats(const T* x, const T* dy, const float* gamma, const float* mean,
                                                   const float* var, float eps, int64_t N, int64_t C, int64_t HW,
                                                   Format f, T* dx, float* dgamma, float* dbeta) {
  const int64_t c = blockIdx.x;
  const float inv_sd = rsqrtf(var[c] + eps), scale = gamma[c] * inv_sd, m = mean[c];
  double sum_dy = 0, sum_dy_xhat = 0;
  for (int64_t i = threadIdx.x; i < N * HW; i += blockDim.x) {
    const int64_t at = channel_element(f, C, HW, c, i);
    const float g = load(&dy[at]);
    sum_dy += g;
    sum_dy_xhat += g * (load(&x[at]) - m) * inv_sd;
    store(&dx[at], g * scale);
  }
  __shared__ double s_dy[kThreads], s_xhat[kThreads];
  s_dy[threadIdx.x] = sum_dy;
  s_xhat[threadIdx.x] = sum_dy_xhat;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      s_dy[threadIdx.x] += s_dy[threadIdx.x + half];
      s_xhat[threadIdx.x] += s_xhat[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    dbeta[c] = static_cast<float>(s_dy[0]);
    dgamma[c] = static_cast<float>(s_xhat[0]);
  }
}

class CudaBatchNorm final : public BatchNormOp {
 public:
  CudaBatchNorm(const BatchNormOptions& o, const TensorSpec& x)
      : options_(o),
        shape_(x.shape),
        dtype_(dtype_of(x)),
        format_(format_of(x)),
        saved_mean_(plain_spec({x.shape[1]}, Device::kCuda)),
        saved_inv_sd_(plain_spec({x.shape[1]}, Device::kCuda)) {
    RT_CHECK(!o.fuse_relu, "batch norm with a fused ReLU is the CPU's alone");
    RT_CHECK(o.eps >= CUDNN_BN_MIN_EPSILON, "cuDNN batch norm needs eps >= ", CUDNN_BN_MIN_EPSILON, ", got ", o.eps);
    x_.set(x);
    // (1, C, 1, 1) float32 for every input type cuDNN takes.
    RT_CU(cudnnDeriveBNTensorDescriptor(stats_.d, x_.d, mode_));
    cudnnHandle_t h = context().cudnn;
    size_t forward_ws = 0, backward_ws = 0;
    RT_CU(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(h, mode_, kOps, x_.d, nullptr, x_.d, stats_.d,
                                                                   nullptr, &forward_ws));
    RT_CU(cudnnGetBatchNormalizationBackwardExWorkspaceSize(h, mode_, kOps, x_.d, nullptr, x_.d, nullptr, x_.d,
                                                            stats_.d, nullptr, &backward_ws));
    reserve_workspace(forward_ws > backward_ws ? forward_ws : backward_ws);
    RT_CU(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(h, mode_, kOps, nullptr, x_.d, &reserve_bytes_));
    if (reserve_bytes_) reserve_ = allocate_zeroed(Device::kCuda, reserve_bytes_);
  }

  void forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y, Tensor& running_mean,
                        Tensor& running_var) override {
    RT_CU(cudnnBatchNormalizationForwardTrainingEx(context().cudnn, mode_, kOps, &kOne, &kZero, x_.d, x.data(), nullptr,
                                                   nullptr, x_.d, y.data(), stats_.d, gamma.data(), beta.data(),
                                                   options_.momentum, running_mean.data(), running_var.data(),
                                                   options_.eps, saved_mean_.data(), saved_inv_sd_.data(), nullptr,
                                                   workspace(), workspace_bytes(), reserve_.get(), reserve_bytes_));
  }

  void forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                         const Tensor& running_mean, const Tensor& running_var) override {
    RT_CU(cudnnBatchNormalizationForwardInference(context().cudnn, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x_.d,
                                                  x.data(), x_.d, y.data(), stats_.d, gamma.data(), beta.data(),
                                                  running_mean.data(), running_var.data(), options_.eps));
  }

  void backward_training(const Tensor& x, const Tensor& gamma, const Tensor&, const Tensor& dy, Tensor& dx,
                         Tensor& dgamma, Tensor& dbeta) override {
    RT_CU(cudnnBatchNormalizationBackwardEx(context().cudnn, mode_, kOps, &kOne, &kZero, &kOne, &kZero, x_.d, x.data(),
                                            nullptr, nullptr, x_.d, dy.data(), nullptr, nullptr, x_.d, dx.data(),
                                            stats_.d, gamma.data(), nullptr, dgamma.data(), dbeta.data(), options_.eps,
                                            saved_mean_.data(), saved_inv_sd_.data(), nullptr, workspace(),
                                            workspace_bytes(), reserve_.get(), reserve_bytes_));
  }

  void backward_inference(const Tensor& x, const Tensor& gamma, const Tensor&, const Tensor& dy, Tensor& dx,
                          Tensor& dgamma, Tensor& dbeta, const Tensor& running_mean,
                          const Tensor& running_var) override {
    with_storage(dtype_, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      batch_norm_backward_constant_stats<<<static_cast<unsigned>(shape_[1]), kThreads, 0, context().stream>>>(
          as<T>(x.data()), as<T>(dy.data()), gamma.data(), running_mean.data(), running_var.data(),
          static_cast<float>(options_.eps), shape_[0], shape_[1], shape_[2] * shape_[3], format_, as<T>(dx.data()),
          dgamma.data(), dbeta.data());
    });
    RT_CU_LAUNCHED();
  }

 private:
  static constexpr cudnnBatchNormOps_t kOps = CUDNN_BATCHNORM_OPS_BN;

  BatchNormOptions options_;
  Shape shape_;
  DType dtype_;
  Format format_;
  cudnnBatchNormMode_t mode_ = format_ == Format::kNhwc ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT : CUDNN_BATCHNORM_SPATIAL;
  TensorDesc x_, stats_;
  Tensor saved_mean_, saved_inv_sd_;  // (C): the last training forward's batch statistics
  std::shared_ptr<void> reserve_;     // what the training forward leaves for backward
  size_t reserve_bytes_ = 0;
};

}  // namespace

std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormOptions& options, const TensorSpec& x) {
  return std::make_unique<CudaBatchNorm>(options, x);
}

}  // namespace rt::cuda
