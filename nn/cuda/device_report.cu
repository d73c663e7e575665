// What the CUDA side of this build sees: driver, runtime, cuDNN and cuBLAS versions and the GPUs, or the
// driver's own words for why there are none (NCCL's version is dist's: nccl_version()). Built
// only with RINGTRAIN_CUDA.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <sstream>
#include <string>

#include "nn/cuda/cublas_library.h"
#include "nn/device.h"

namespace rt {

std::string cuda_report() {
  std::ostringstream os;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  const size_t cudnn = cudnnGetVersion();  // cuDNN 9: major * 10000 + minor * 100 + patch
  os << "CUDA runtime " << runtime / 1000 << "." << runtime % 1000 / 10 << ", cuDNN " << cudnn / 10000 << "."
     << cudnn % 10000 / 100 << "." << cudnn % 100;
  int cublas[3] = {0, 0, 0};  // asked of the library loaded, which may be newer than the headers
  cuda::cublas().get_property(MAJOR_VERSION, &cublas[0]);
  cuda::cublas().get_property(MINOR_VERSION, &cublas[1]);
  cuda::cublas().get_property(PATCH_LEVEL, &cublas[2]);
  os << ", cuBLAS " << cublas[0] << "." << cublas[1] << "." << cublas[2] << ", driver ";
  if (driver == 0)
    os << "none";
  else
    os << driver / 1000 << "." << driver % 1000 / 10;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    os << "; no usable GPU: " << cudaGetErrorString(e);
    return os.str();
  }
  os << "; " << count << " GPU(s)";
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) == cudaSuccess)
      os << "\n    " << i << ": " << p.name << ", sm_" << p.major << p.minor << ", " << p.totalGlobalMem / (1024 * 1024)
         << " MiB";
  }
  return os.str();
}

}  // namespace rt
