// RAII owners of cuDNN descriptors, so an op's descriptors live exactly as long as the op.
#pragma once

#include <cudnn.h>

#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/gpu_layout.h"
#include "nn/tensor.h"

namespace rt::cuda {

template <typename Handle, cudnnStatus_t (*Create)(Handle*), cudnnStatus_t (*Destroy)(Handle)>
struct CudnnDescriptor {
  Handle d = nullptr;
  CudnnDescriptor() { RT_CU(Create(&d)); }
  ~CudnnDescriptor() { Destroy(d); }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
};

using FilterDesc = CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc =
    CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;

inline cudnnDataType_t cudnn_type(DType t) {
  return t == DType::kBf16 ? CUDNN_DATA_BFLOAT16 : t == DType::kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
}
inline cudnnTensorFormat_t cudnn_format(Format f) { return f == Format::kNhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW; }

struct TensorDesc
    : CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor> {
  // Plain NCHW float32 of a 4-D shape.
  void set4d(const Shape& s) {
    RT_CU(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(s[0]),
                                     static_cast<int>(s[1]), static_cast<int>(s[2]), static_cast<int>(s[3])));
  }
  // A 4-D GPU spec in its own element type and format.
  void set(const TensorSpec& spec) {
    const Shape& s = spec.shape;
    RT_CU(cudnnSetTensor4dDescriptor(d, cudnn_format(format_of(spec)), cudnn_type(dtype_of(spec)),
                                     static_cast<int>(s[0]), static_cast<int>(s[1]), static_cast<int>(s[2]),
                                     static_cast<int>(s[3])));
  }
};

}  // namespace rt::cuda
