// Convolution on cuDNN's legacy API (deprecated in cuDNN 9 but present, and the readable choice;
// it stays inside this file). Each direction's algorithm is chosen once per shape from cuDNN's own
// timings under a workspace limit (see algorithm_choice.h); float32 runs with FMA math, so results
// match the CPU's to rounding, unless train.precision allows TF32.
#include <string>
#include <vector>

#include "base/check.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/algorithm_choice.h"
#include "nn/ops/cuda/descriptors.h"
#include "nn/ops/cuda/make.h"

namespace rt::cuda {
namespace {

constexpr size_t kWorkspaceLimit = size_t{4} << 30;  // per convolution; the shared workspace is the largest
constexpr float kOne = 1.0f, kZero = 0.0f;

AlgorithmCache& cache() {
  static AlgorithmCache c;
  return c;
}

bool is_transform(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool is_transform(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool is_transform(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

template <typename Perf>
std::vector<AlgorithmTrial> trials_of(const Perf* perf, int count) {
  std::vector<AlgorithmTrial> trials;
  for (int i = 0; i < count; ++i)
    trials.push_back({static_cast<int>(perf[i].algo), perf[i].status == CUDNN_STATUS_SUCCESS, perf[i].time,
                      perf[i].memory, is_transform(perf[i].algo), static_cast<int>(perf[i].mathType)});
  return trials;
}

class CudaConv2d final : public Conv2dOp {
 public:
  CudaConv2d(const Conv2dGeometry& g, const TensorSpec& x, bool need_dx, ConvAlgorithm algorithm)
      : y_spec_(plain_spec(g.output_shape(x.shape), Device::kCuda)), need_dx_(need_dx), bias_(g.bias),
        allow_transforms_(algorithm == ConvAlgorithm::kWinograd) {
    Context& c = context();
    x_.set4d(x.shape);
    y_.set4d(y_spec_.shape);
    const Shape w = g.weight_shape();
    RT_CU(cudnnSetFilter4dDescriptor(w_.d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(w[0]),
                                     static_cast<int>(w[1]), static_cast<int>(w[2]), static_cast<int>(w[3])));
    if (bias_) b_.set4d({1, g.out_channels, 1, 1});
    RT_CU(cudnnSetConvolution2dDescriptor(conv_.d, static_cast<int>(g.pad_h), static_cast<int>(g.pad_w),
                                          static_cast<int>(g.stride_h), static_cast<int>(g.stride_w),
                                          static_cast<int>(g.dilation_h), static_cast<int>(g.dilation_w),
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    RT_CU(cudnnSetConvolutionGroupCount(conv_.d, static_cast<int>(g.groups)));
    const cudnnMathType_t math = c.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    RT_CU(cudnnSetConvolutionMathType(conv_.d, math));
    int n = 0, k = 0, h = 0, wd = 0;
    RT_CU(cudnnGetConvolution2dForwardOutputDim(conv_.d, x_.d, w_.d, &n, &k, &h, &wd));
    RT_ASSERT(Shape({n, k, h, wd}) == y_spec_.shape);

    key_ = str_cat(shape_str(x.shape), " w", shape_str(w), " p", g.pad_h, ",", g.pad_w, " s", g.stride_h, ",",
                   g.stride_w, " d", g.dilation_h, ",", g.dilation_w, " g", g.groups, " m", static_cast<int>(math),
                   " t", allow_transforms_);
    fwd_ = choose("fwd", [&](auto* perf, int cap, int* got) {
      return cudnnFindConvolutionForwardAlgorithm(c.cudnn, x_.d, w_.d, conv_.d, y_.d, cap, got, perf);
    }, static_cast<cudnnConvolutionFwdAlgoPerf_t*>(nullptr));
    bwd_filter_ = choose("bwd_filter", [&](auto* perf, int cap, int* got) {
      return cudnnFindConvolutionBackwardFilterAlgorithm(c.cudnn, x_.d, y_.d, conv_.d, w_.d, cap, got, perf);
    }, static_cast<cudnnConvolutionBwdFilterAlgoPerf_t*>(nullptr));
    if (need_dx_)
      bwd_data_ = choose("bwd_data", [&](auto* perf, int cap, int* got) {
        return cudnnFindConvolutionBackwardDataAlgorithm(c.cudnn, w_.d, y_.d, conv_.d, x_.d, cap, got, perf);
      }, static_cast<cudnnConvolutionBwdDataAlgoPerf_t*>(nullptr));
  }

  const TensorSpec& y_spec() const override { return y_spec_; }
  ConvAlgorithm algorithm() const override {
    return fwd_.transform ? ConvAlgorithm::kWinograd : ConvAlgorithm::kDirect;
  }

  void forward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) override {
    Context& c = context();
    set_math(fwd_);
    RT_CU(cudnnConvolutionForward(c.cudnn, &kOne, x_.d, x.data(), w_.d, w.data(), conv_.d,
                                  static_cast<cudnnConvolutionFwdAlgo_t>(fwd_.algorithm), workspace(), fwd_.workspace,
                                  &kZero, y_.d, y.data()));
    if (b) RT_CU(cudnnAddTensor(c.cudnn, &kOne, b_.d, b->data(), &kOne, y_.d, y.data()));
  }

  void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    RT_CHECK(need_dx_, "conv2d was planned without backward-data");
    set_math(bwd_data_);
    RT_CU(cudnnConvolutionBackwardData(context().cudnn, &kOne, w_.d, w.data(), y_.d, dy.data(), conv_.d,
                                       static_cast<cudnnConvolutionBwdDataAlgo_t>(bwd_data_.algorithm), workspace(),
                                       bwd_data_.workspace, &kZero, x_.d, dx.data()));
  }

  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* db) override {
    Context& c = context();
    set_math(bwd_filter_);
    RT_CU(cudnnConvolutionBackwardFilter(c.cudnn, &kOne, x_.d, x.data(), y_.d, dy.data(), conv_.d,
                                         static_cast<cudnnConvolutionBwdFilterAlgo_t>(bwd_filter_.algorithm),
                                         workspace(), bwd_filter_.workspace, &kZero, w_.d, dw.data()));
    if (db) RT_CU(cudnnConvolutionBackwardBias(c.cudnn, &kOne, y_.d, dy.data(), &kZero, b_.d, db->data()));
  }

 private:
  // cuDNN may time an algorithm with another math type than the descriptor's; run it with that one.
  void set_math(const AlgorithmTrial& t) {
    RT_CU(cudnnSetConvolutionMathType(conv_.d, static_cast<cudnnMathType_t>(t.math)));
  }

  template <typename Find, typename Perf>
  AlgorithmTrial choose(const char* direction, Find find, Perf*) {
    const std::string key = str_cat(direction, " ", key_);
    if (const AlgorithmTrial* known = cache().find(key)) {
      reserve_workspace(known->workspace);
      return *known;
    }
    Perf perf[16];
    int got = 0;
    RT_CU(find(perf, 16, &got));
    const auto best = choose_algorithm(trials_of(perf, got), kWorkspaceLimit, allow_transforms_);
    RT_CHECK(best.has_value(), "cuDNN has no ", direction, " convolution algorithm for ", key_, " within ",
             kWorkspaceLimit >> 20, " MiB of workspace");
    cache().insert(key, *best);
    reserve_workspace(best->workspace);
    return *best;
  }

  TensorSpec y_spec_;
  bool need_dx_, bias_, allow_transforms_;
  std::string key_;
  TensorDesc x_, y_, b_;
  FilterDesc w_;
  ConvDesc conv_;
  AlgorithmTrial fwd_, bwd_data_, bwd_filter_;
};

}  // namespace

std::unique_ptr<Conv2dOp> make_conv2d(const Conv2dGeometry& g, const TensorSpec& x, bool need_dx,
                                      ConvAlgorithm algorithm) {
  return std::make_unique<CudaConv2d>(g, x, need_dx, algorithm);
}

}  // namespace rt::cuda
