// RAII owners of cuDNN descriptors, so an op's descriptors live exactly as long as the op.
#pragma once

#include <cudnn.h>

#include "nn/cuda/runtime.h"
#include "nn/tensor.h"

namespace rt::cuda {

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc() { RT_CU(cudnnCreateTensorDescriptor(&d)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  // Plain NCHW float32 of a 4-D shape.
  void set4d(const Shape& s) {
    RT_CU(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(s[0]),
                                     static_cast<int>(s[1]), static_cast<int>(s[2]), static_cast<int>(s[3])));
  }
};

struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc() { RT_CU(cudnnCreateFilterDescriptor(&d)); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
};

struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc() { RT_CU(cudnnCreateConvolutionDescriptor(&d)); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};

}  // namespace rt::cuda
