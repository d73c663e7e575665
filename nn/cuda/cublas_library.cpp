// Note [cuBLAS at first use] in cublas_library.h.
#include "nn/cuda/cublas_library.h"

#include <dlfcn.h>

#include "base/check.h"

namespace rt::cuda {
namespace {

template <class F>
void resolve(void* library, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(library, name));
  RT_CHECK(f != nullptr, RT_CUBLAS_SONAME " has no ", name, ": it is not the cuBLAS ringtrain was built with");
}

CublasLibrary load() {
  void* library = dlopen(RT_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  RT_CHECK(library != nullptr, "cannot load ", RT_CUBLAS_SONAME, ", which the CUDA backend needs: ", dlerror(),
           " (install the CUDA toolkit's cuBLAS or name its folder in LD_LIBRARY_PATH)");
  CublasLibrary c{};
  resolve(library, "cublasCreate_v2", c.create);
  resolve(library, "cublasDestroy_v2", c.destroy);
  resolve(library, "cublasSetStream_v2", c.set_stream);
  resolve(library, "cublasSetWorkspace_v2", c.set_workspace);
  resolve(library, "cublasSetMathMode", c.set_math_mode);
  resolve(library, "cublasGetProperty", c.get_property);
  resolve(library, "cublasGetStatusString", c.status_string);
  resolve(library, "cublasSgemm_v2", c.sgemm);
  resolve(library, "cublasGemmEx", c.gemm_ex);
  return c;  // the library stays open for the process's life
}

}  // namespace

const CublasLibrary& cublas() {
  static const CublasLibrary library = load();
  return library;
}

}  // namespace rt::cuda
