// RAII owners of cuDNN descriptors, so an op's descriptors live exactly as long as the op.
#pragma once

#include <cudnn.h>

#include "nn/cuda/runtime.h"
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

using FilterDesc =
    CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc = CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                 cudnnDestroyConvolutionDescriptor>;

struct TensorDesc
    : CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor> {
  // Plain NCHW float32 of a 4-D shape.
  void set4d(const Shape& s) {
    RT_CU(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(s[0]),
                                     static_cast<int>(s[1]), static_cast<int>(s[2]), static_cast<int>(s[3])));
  }
};

}  // namespace rt::cuda
