// cuBLAS, opened at its first use rather than when the process starts.
//
// Note [cuBLAS at first use]: libcublas and the libcublasLt it needs take about 210 MiB resident
// the moment the loader maps them (cuBLAS 13, measured with LD_PRELOAD on /bin/true), which every
// CPU-only run of a CUDA build paid: a third of ResNet-101's bf16 training step's memory beside
// the weights. No ringtrain binary links cuBLAS; the CUDA backend calls these pointers, which the
// first call to cublas() resolves with dlopen from the library of the toolkit it was built with,
// found as the dynamic loader finds any (the binary's run path, LD_LIBRARY_PATH, ldconfig).
#pragma once

#include <cublas_v2.h>

namespace rt::cuda {

struct CublasLibrary {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetWorkspace_v2) set_workspace;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasGetProperty) get_property;
  decltype(&cublasGetStatusString) status_string;
  decltype(&cublasSgemm_v2) sgemm;
  // The C function; the header adds a C++ overload taking a cudaDataType compute type.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
};

// Loads cuBLAS on the first call; rt::Error naming the library and the loader's words where it
// cannot.
const CublasLibrary& cublas();

}  // namespace rt::cuda
