// Channel concatenation of plain NCHW tensors: input i is, for each sample, one contiguous run of
// C_i x H x W floats at channel offset c_i of the output, so both directions are one strided
// copy (cudaMemcpy2DAsync) per input.
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/make.h"

namespace rt::cuda {
namespace {

class CudaConcat final : public ConcatOp {
 public:
  explicit CudaConcat(const std::vector<TensorSpec>& xs) {
    Shape y = xs[0].shape;
    y[1] = 0;
    plane_ = xs[0].shape[2] * xs[0].shape[3];
    for (const TensorSpec& x : xs) {
      offsets_.push_back(y[1]);
      channels_.push_back(x.shape[1]);
      y[1] += x.shape[1];
    }
    y_spec_ = plain_spec(y, Device::kCuda);
  }

  const TensorSpec& y_spec() const override { return y_spec_; }

  void forward(const std::vector<const Tensor*>& xs, Tensor& y) override {
    for (size_t i = 0; i < xs.size(); ++i) copy(xs[i]->data(), run(i), y.data() + offsets_[i] * plane_, row());
  }

  void backward(const Tensor& dy, const std::vector<Tensor*>& dxs) override {
    for (size_t i = 0; i < dxs.size(); ++i)
      if (dxs[i]) copy(dy.data() + offsets_[i] * plane_, row(), dxs[i]->data(), run(i));
  }

 private:
  size_t run(size_t i) const { return static_cast<size_t>(channels_[i] * plane_) * sizeof(float); }
  size_t row() const { return static_cast<size_t>(y_spec_.shape[1] * plane_) * sizeof(float); }
  // Copies one run of min(src_pitch, dst_pitch) bytes per sample.
  void copy(const float* src, size_t src_pitch, float* dst, size_t dst_pitch) {
    const size_t width = src_pitch < dst_pitch ? src_pitch : dst_pitch;
    RT_CU(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, static_cast<size_t>(y_spec_.shape[0]),
                            cudaMemcpyDeviceToDevice, context().stream));
  }

  TensorSpec y_spec_;
  int64_t plane_ = 0;
  std::vector<int64_t> offsets_, channels_;
};

}  // namespace

std::unique_ptr<ConcatOp> make_concat(const std::vector<TensorSpec>& xs) { return std::make_unique<CudaConcat>(xs); }

}  // namespace rt::cuda
