// Convolution on cuDNN's legacy API (deprecated in cuDNN 9 but present, and the readable choice;
// it stays inside this file). Each direction's algorithm is chosen once per shape from cuDNN's own
// timings under a workspace limit (see algorithm_choice.h); float32 runs with FMA math, so results
// match the CPU's to rounding, unless train.precision allows TF32.
//
// Under bf16 / fp16 (Note [Mixed precision]) the convolution reads and writes 16-bit NHWC with
// float32 accumulation on tensor cores. Its float32 weights are rounded into a 16-bit KRSC copy at
// each forward (backward uses that same copy, as autocast does), its weight gradient comes back
// in 16 bits and is widened into the float32 gradient, and an input in another layout (the
// graph's plain float32 images) is converted into a buffer of the op's own first. A bias is
// added, and its gradient summed in float32, by kernels of ours over (rows, C) tiles of the NHWC
// tensor (channel_tiles.h). With train.cudnn_graph, a direction may run a plan of cuDNN's
// graph API instead (Note [cuDNN graph API] in cudnn_graph.h).
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/check.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/algorithm_choice.h"
#include "nn/ops/cuda/channel_tiles.h"
#include "nn/ops/cuda/cudnn_graph.h"
#include "nn/ops/cuda/descriptors.h"
#include "nn/ops/cuda/element_io.cuh"
#include "nn/ops/cuda/make.h"
#include "nn/ops/cuda/scaling.h"

namespace rt::cuda {
namespace {

constexpr size_t kWorkspaceLimit = size_t{4} << 30;  // per convolution; the shared workspace is the largest

AlgorithmCache& cache() {
  static AlgorithmCache c;
  return c;
}

// What the graph API offers one direction of one shape, by key: its plan (null where cuDNN
// offered none; layers of one shape share it, each with its own CudnnGraphPack) and, once
// train.cudnn_graph = "where_faster" asks, the legacy algorithm's time on the same ConvTimer.
struct CudnnGraphChoice {
  std::shared_ptr<CudnnGraphPlan> plan;
  bool legacy_timed = false;
  std::optional<float> legacy_ms;  // nullopt where that timing failed: the legacy algorithm then runs
};
std::map<std::string, CudnnGraphChoice>& cudnn_graph_choices() {
  static std::map<std::string, CudnnGraphChoice> choices;
  return choices;
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

// y += b per channel, for 16-bit NHWC outputs (cudnnAddTensor wants the bias in y's type).
template <typename T>
__global__ void add_channel_bias(ChannelTiles t, const float* b, T* y) {
  const int64_t c = t.channel(blockIdx.x, threadIdx.x);
  add_to_column(t, c < t.C ? b[c] : 0.0f, y, c, blockIdx.y, threadIdx.y);
}

// sums[slice][c] = slice_sum(t, x, c, slice) in float32, from the row threads' shares in shared memory.
template <typename T>
__global__ void channel_slice_sums(ChannelTiles t, const T* x, float* sums) {
  __shared__ float shares[ChannelTiles::kRowThreads][ChannelTiles::kLanes];
  const int64_t c = t.channel(blockIdx.x, threadIdx.x);
  shares[threadIdx.y][threadIdx.x] = column_share(t, x, c, blockIdx.y, threadIdx.y);
  __syncthreads();
  if (threadIdx.y != 0 || c >= t.C) return;
  float s = 0.0f;
  for (int k = 0; k < ChannelTiles::kRowThreads; ++k) s += shares[k][threadIdx.x];
  sums[blockIdx.y * t.C + c] = s;
}

const dim3 kTileBlock(ChannelTiles::kLanes, ChannelTiles::kRowThreads);
dim3 grid_of(const ChannelTiles& t) { return dim3(static_cast<unsigned>(t.tiles()), static_cast<unsigned>(t.slices)); }

// db[c] = the sum of the 16-bit NHWC dy over (n, h, w), in float32: each slice's sums into
// `partials` (slices, C), then those into db; one pass where there is one slice.
template <typename T>
void sum_channels(const ChannelTiles& t, const T* dy, float* partials, float* db) {
  const cudaStream_t s = context().stream;
  if (t.slices == 1) {
    channel_slice_sums<<<grid_of(t), kTileBlock, 0, s>>>(t, dy, db);
  } else {
    channel_slice_sums<<<grid_of(t), kTileBlock, 0, s>>>(t, dy, partials);
    channel_slice_sums<<<grid_of(t.of_partials()), kTileBlock, 0, s>>>(t.of_partials(), partials, db);
  }
  RT_CU_LAUNCHED();
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
  CudaConv2d(const Conv2dGeometry& g, const TensorSpec& x, bool need_dx, const PlanContext& plan)
      : need_dx_(need_dx),
        bias_(g.bias),
        allow_transforms_(plan.conv_algorithm == ConvAlgorithm::kWinograd),
        cudnn_graph_(plan.cudnn_graph),
        x_spec_(x),
        w_spec_(plain_spec(g.weight_shape(), Device::kCuda)) {
    Context& c = context();
    const DType t = activation_dtype(plan.precision);
    half_ = t != DType::kF32;
    const Format f = half_ ? Format::kNhwc : Format::kNchw;
    run_x_spec_ = gpu_spec(x.shape, t, f);
    y_spec_ = gpu_spec(g.output_shape(x.shape), t, f);
    w_run_spec_ = gpu_spec(g.weight_shape(), t, f);  // NHWC of (K, C/g, R, S) is cuDNN's KRSC
    stage_x_ = !x.same_as(run_x_spec_);
    if (stage_x_) {
      x_run_ = Tensor(run_x_spec_);
      if (need_dx_) dx_run_ = Tensor(run_x_spec_);
    }
    if (half_) {
      w_run_ = Tensor(w_run_spec_);
      dw_run_ = Tensor(w_run_spec_);
      const Shape& y = y_spec_.shape;
      bias_tiles_ = ChannelTiles::of(y[0] * y[2] * y[3], y[1]);
      if (bias_ && bias_tiles_.slices > 1)
        bias_partials_ = Tensor(plain_spec({bias_tiles_.slices, y[1]}, Device::kCuda));
    }
    x_.set(run_x_spec_);
    y_.set(y_spec_);
    const Shape w = g.weight_shape();
    RT_CU(cudnnSetFilter4dDescriptor(w_.d, cudnn_type(t), cudnn_format(f), static_cast<int>(w[0]),
                                     static_cast<int>(w[1]), static_cast<int>(w[2]), static_cast<int>(w[3])));
    if (bias_) b_.set4d({1, g.out_channels, 1, 1});
    RT_CU(cudnnSetConvolution2dDescriptor(conv_.d, static_cast<int>(g.pad_h), static_cast<int>(g.pad_w),
                                          static_cast<int>(g.stride_h), static_cast<int>(g.stride_w),
                                          static_cast<int>(g.dilation_h), static_cast<int>(g.dilation_w),
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    RT_CU(cudnnSetConvolutionGroupCount(conv_.d, static_cast<int>(g.groups)));
    const cudnnMathType_t math = half_                         ? CUDNN_TENSOR_OP_MATH
                                 : allows_tf32(plan.precision) ? CUDNN_DEFAULT_MATH
                                                               : CUDNN_FMA_MATH;
    RT_CU(cudnnSetConvolutionMathType(conv_.d, math));
    int n = 0, k = 0, h = 0, wd = 0;
    RT_CU(cudnnGetConvolution2dForwardOutputDim(conv_.d, x_.d, w_.d, &n, &k, &h, &wd));
    RT_ASSERT(Shape({n, k, h, wd}) == y_spec_.shape);

    key_ = str_cat(shape_str(x.shape), " ", y_spec_.describe(), " w", shape_str(w), " p", g.pad_h, ",", g.pad_w, " s",
                   g.stride_h, ",", g.stride_w, " d", g.dilation_h, ",", g.dilation_w, " g", g.groups, " m",
                   static_cast<int>(math), " t", allow_transforms_);
    fwd_ = choose(
        "fwd",
        [&](auto* perf, int cap, int* got) {
          return cudnnFindConvolutionForwardAlgorithm(c.cudnn, x_.d, w_.d, conv_.d, y_.d, cap, got, perf);
        },
        static_cast<cudnnConvolutionFwdAlgoPerf_t*>(nullptr));
    bwd_filter_ = choose(
        "bwd_filter",
        [&](auto* perf, int cap, int* got) {
          return cudnnFindConvolutionBackwardFilterAlgorithm(c.cudnn, x_.d, y_.d, conv_.d, w_.d, cap, got, perf);
        },
        static_cast<cudnnConvolutionBwdFilterAlgoPerf_t*>(nullptr));
    if (need_dx_)
      bwd_data_ = choose(
          "bwd_data",
          [&](auto* perf, int cap, int* got) {
            return cudnnFindConvolutionBackwardDataAlgorithm(c.cudnn, w_.d, y_.d, conv_.d, x_.d, cap, got, perf);
          },
          static_cast<cudnnConvolutionBwdDataAlgoPerf_t*>(nullptr));
    if (cudnn_graph_ != CudnnGraphUse::kNever) {
      CudnnGraphProblem p;
      p.io_type = cudnn_type(t);
      p.nhwc = f == Format::kNhwc;
      const auto dims = [](const Shape& s) { return std::array<int64_t, 4>{s[0], s[1], s[2], s[3]}; };
      p.x = dims(run_x_spec_.shape), p.w = dims(w), p.y = dims(y_spec_.shape);
      p.pad = {g.pad_h, g.pad_w}, p.stride = {g.stride_h, g.stride_w}, p.dilation = {g.dilation_h, g.dilation_w};
      p.rules = {!half_, allows_tf32(plan.precision), allow_transforms_};  // the legacy descriptor's math, as set above
      cudnn_graph_fwd_ = cudnn_graph_plan("fwd", p, ConvDirection::kForward, fwd_);
      cudnn_graph_filter_ = cudnn_graph_plan("bwd_filter", p, ConvDirection::kBackwardFilter, bwd_filter_);
      if (need_dx_) cudnn_graph_data_ = cudnn_graph_plan("bwd_data", p, ConvDirection::kBackwardData, bwd_data_);
    }
  }

  const TensorSpec& y_spec() const override { return y_spec_; }
  ConvAlgorithm algorithm() const override {
    return fwd_.transform ? ConvAlgorithm::kWinograd : ConvAlgorithm::kDirect;
  }
  int cudnn_graph_directions() const override {
    return (cudnn_graph_fwd_ != nullptr) + (cudnn_graph_data_ != nullptr) + (cudnn_graph_filter_ != nullptr);
  }

  void forward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) override {
    Context& c = context();
    if (stage_x_) convert_layout(x.data(), x_spec_, x_run_.data(), run_x_spec_);
    if (half_) convert_layout(w.data(), w_spec_, w_run_.data(), w_run_spec_);
    const float* xr = stage_x_ ? x_run_.data() : x.data();
    const float* wr = half_ ? w_run_.data() : w.data();
    if (cudnn_graph_fwd_) {
      cudnn_graph_fwd_->run(fwd_pack_, xr, wr, y.data(), workspace());
    } else {
      RT_CU(run_legacy(ConvDirection::kForward, const_cast<float*>(xr), const_cast<float*>(wr), y.data(), workspace()));
    }
    if (!b) return;
    if (!half_) return RT_CU(cudnnAddTensor(c.cudnn, &kOne, b_.d, b->data(), &kOne, y_.d, y.data()));
    with_storage(dtype_of(y_spec_), [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      add_channel_bias<<<grid_of(bias_tiles_), kTileBlock, 0, c.stream>>>(bias_tiles_, b->data(), as<T>(y.data()));
    });
    RT_CU_LAUNCHED();
  }

  // Under bf16 / fp16, w is the weights' 16-bit copy that forward made.
  void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    RT_CHECK(need_dx_, "conv2d was planned without backward-data");
    float* out = stage_x_ ? dx_run_.data() : dx.data();
    const float* wr = half_ ? w_run_.data() : w.data();
    if (cudnn_graph_data_) {
      cudnn_graph_data_->run(data_pack_, dy.data(), wr, out, workspace());
    } else {
      RT_CU(run_legacy(ConvDirection::kBackwardData, out, const_cast<float*>(wr), const_cast<float*>(dy.data()),
                       workspace()));
    }
    if (stage_x_) convert_layout(dx_run_.data(), run_x_spec_, dx.data(), x_spec_);
  }

  // When the input was converted, the conversion forward made is what the weights saw.
  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* db) override {
    Context& c = context();
    const float* xr = stage_x_ ? x_run_.data() : x.data();
    float* dwr = half_ ? dw_run_.data() : dw.data();
    if (cudnn_graph_filter_) {
      cudnn_graph_filter_->run(filter_pack_, xr, dy.data(), dwr, workspace());
    } else {
      RT_CU(run_legacy(ConvDirection::kBackwardFilter, const_cast<float*>(xr), dwr, const_cast<float*>(dy.data()),
                       workspace()));
    }
    if (half_) convert_layout(dw_run_.data(), w_run_spec_, dw.data(), w_spec_);
    if (!db) return;
    if (!half_) return RT_CU(cudnnConvolutionBackwardBias(c.cudnn, &kOne, y_.d, dy.data(), &kZero, b_.d, db->data()));
    with_storage(dtype_of(y_spec_), [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      sum_channels(bias_tiles_, as<T>(dy.data()), bias_partials_.data(), db->data());
    });
  }

 private:
  // cuDNN may time an algorithm with another math type than the descriptor's; run it with that one.
  void set_math(const AlgorithmTrial& t) {
    RT_CU(cudnnSetConvolutionMathType(conv_.d, static_cast<cudnnMathType_t>(t.math)));
  }

  // One direction's legacy algorithm, on (x, w, y) by role as in CudnnGraphPlan::run (backward
  // data writes x with dy in y; backward filter writes w from x and dy): the steps' call and
  // the one ConvTimer times against the graph API.
  cudnnStatus_t run_legacy(ConvDirection d, void* x, void* w, void* y, void* ws) {
    cudnnHandle_t h = context().cudnn;
    switch (d) {
      case ConvDirection::kForward:
        set_math(fwd_);
        return cudnnConvolutionForward(h, &kOne, x_.d, x, w_.d, w, conv_.d,
                                       static_cast<cudnnConvolutionFwdAlgo_t>(fwd_.algorithm), ws, fwd_.workspace,
                                       &kZero, y_.d, y);
      case ConvDirection::kBackwardData:
        set_math(bwd_data_);
        return cudnnConvolutionBackwardData(h, &kOne, w_.d, w, y_.d, y, conv_.d,
                                            static_cast<cudnnConvolutionBwdDataAlgo_t>(bwd_data_.algorithm), ws,
                                            bwd_data_.workspace, &kZero, x_.d, x);
      case ConvDirection::kBackwardFilter:
        break;
    }
    set_math(bwd_filter_);
    return cudnnConvolutionBackwardFilter(h, &kOne, x_.d, x, y_.d, y, conv_.d,
                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(bwd_filter_.algorithm), ws,
                                          bwd_filter_.workspace, &kZero, w_.d, w);
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

  // The graph API's plan for one direction, if it is to run instead of `legacy` (see CudnnGraphUse):
  // with train.cudnn_graph = "where_faster" only where it timed faster than run_legacy on the same timer.
  std::shared_ptr<CudnnGraphPlan> cudnn_graph_plan(const char* direction, CudnnGraphProblem p, ConvDirection d,
                                                   const AlgorithmTrial& legacy) {
    p.direction = d;
    const std::string key = str_cat("graph ", direction, " ", key_);
    const bool where_faster = cudnn_graph_ == CudnnGraphUse::kWhereFaster;
    auto [it, fresh] = cudnn_graph_choices().try_emplace(key);
    CudnnGraphChoice& choice = it->second;
    if (fresh || (where_faster && choice.plan && !choice.legacy_timed)) {
      // An opt-in path must not stop a run the legacy API can do: a failure to plan or
      // time is said once per shape, and the legacy algorithm runs.
      if (where_faster) choice.legacy_timed = true;  // tried once, even if what follows throws
      try {
        ConvTimer timer(p);
        if (fresh) choice.plan = CudnnGraphPlan::best(p, kWorkspaceLimit, timer);
        if (where_faster && choice.plan) {
          choice.legacy_ms = timer.mean_ms(
              [&](void* x, void* w, void* y, void* ws) { return run_legacy(d, x, w, y, ws) == CUDNN_STATUS_SUCCESS; },
              legacy.workspace);
        }
      } catch (const Error& e) {
        std::cerr << "ringtrain: cuDNN's graph API could not plan or time " << key << " (" << e.what()
                  << "); the legacy algorithm runs\n";
      }
    }
    const std::shared_ptr<CudnnGraphPlan>& plan = choice.plan;
    if (!plan || (where_faster && (!choice.legacy_ms || plan->ms() >= *choice.legacy_ms))) return nullptr;
    reserve_workspace(plan->workspace());
    return plan;
  }

  bool need_dx_, bias_, allow_transforms_;
  CudnnGraphUse cudnn_graph_;
  bool half_ = false;     // 16-bit NHWC (Note [Mixed precision])
  bool stage_x_ = false;  // the input arrives in another layout than the one the convolution reads
  TensorSpec x_spec_, run_x_spec_, y_spec_, w_spec_, w_run_spec_;
  Tensor x_run_, dx_run_;    // with stage_x_: the input, and its gradient, in run_x_spec_
  Tensor w_run_, dw_run_;    // with half_: the weights, and their gradient, in 16-bit KRSC
  ChannelTiles bias_tiles_;  // with half_: the walk of the bias over y and dy, (N H W, K)
  Tensor bias_partials_;     // with a bias and several slices: (slices, K) partial sums of db
  std::string key_;
  TensorDesc x_, y_, b_;
  FilterDesc w_;
  ConvDesc conv_;
  AlgorithmTrial fwd_, bwd_data_, bwd_filter_;
  std::shared_ptr<CudnnGraphPlan> cudnn_graph_fwd_, cudnn_graph_data_,
      cudnn_graph_filter_;                             // null: the legacy algorithm
  CudnnGraphPack fwd_pack_, data_pack_, filter_pack_;  // this layer's pointers
};

}  // namespace

std::unique_ptr<Conv2dOp> make_conv2d(const Conv2dGeometry& g, const TensorSpec& x, bool need_dx,
                                      const PlanContext& plan) {
  return std::make_unique<CudaConv2d>(g, x, need_dx, plan);
}

}  // namespace rt::cuda
