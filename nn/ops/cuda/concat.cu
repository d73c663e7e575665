// Channel concatenation. In NCHW, input i is, for each sample, one contiguous run of C_i x H x W
// elements at channel offset c_i of the output; in NHWC (Note [Mixed precision]) it is, for each
// pixel, a run of C_i elements at offset c_i. Either way both directions are one strided copy
// (cudaMemcpy2DAsync) per input.
#include "base/check.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/gpu_layout.h"
#include "nn/ops/cuda/make.h"

namespace rt::cuda {
namespace {

class CudaConcat final : public ConcatOp {
 public:
  explicit CudaConcat(const std::vector<TensorSpec>& xs) {
    const DType t = dtype_of(xs[0]);
    const Format f = format_of(xs[0]);
    Shape y = xs[0].shape;
    y[1] = 0;
    for (const TensorSpec& x : xs) {
      RT_CHECK(dtype_of(x) == t && format_of(x) == f, "concat on the GPU needs its inputs in one layout, got ",
               xs[0].describe(), " and ", x.describe());
      offsets_.push_back(y[1]);
      channels_.push_back(x.shape[1]);
      y[1] += x.shape[1];
    }
    y_spec_ = gpu_spec(y, t, f);
    const int64_t plane = y[2] * y[3];
    rows_ = f == Format::kNhwc ? y[0] * plane : y[0];
    unit_ = (f == Format::kNhwc ? 1 : plane) * static_cast<int64_t>(dtype_bytes(t));  // bytes per channel in a row
  }

  const TensorSpec& y_spec() const override { return y_spec_; }

  void forward(const std::vector<const Tensor*>& xs, Tensor& y) override {
    for (size_t i = 0; i < xs.size(); ++i) copy(bytes(xs[i]->data()), run(i), bytes(y.data()) + offset(i), row());
  }

  void backward(const Tensor& dy, const std::vector<Tensor*>& dxs) override {
    for (size_t i = 0; i < dxs.size(); ++i)
      if (dxs[i]) copy(bytes(dy.data()) + offset(i), row(), bytes(dxs[i]->data()), run(i));
  }

 private:
  static char* bytes(float* p) { return reinterpret_cast<char*>(p); }
  static const char* bytes(const float* p) { return reinterpret_cast<const char*>(p); }
  size_t run(size_t i) const { return static_cast<size_t>(channels_[i] * unit_); }
  size_t offset(size_t i) const { return static_cast<size_t>(offsets_[i] * unit_); }
  size_t row() const { return static_cast<size_t>(y_spec_.shape[1] * unit_); }
  // Copies one run of min(src_pitch, dst_pitch) bytes per row.
  void copy(const char* src, size_t src_pitch, char* dst, size_t dst_pitch) {
    const size_t width = src_pitch < dst_pitch ? src_pitch : dst_pitch;
    RT_CU(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, static_cast<size_t>(rows_), cudaMemcpyDeviceToDevice,
                            context().stream));
  }

  TensorSpec y_spec_;
  int64_t rows_ = 0, unit_ = 0;
  std::vector<int64_t> offsets_, channels_;
};

}  // namespace

std::unique_ptr<ConcatOp> make_concat(const std::vector<TensorSpec>& xs) { return std::make_unique<CudaConcat>(xs); }

}  // namespace rt::cuda
