// RT_HD marks a function that nvcc compiles for both the host and the GPU, so the per-element math
// of a CUDA kernel is the very function the CPU-side tests call. Plain C++ compilers see nothing.
#pragma once

#ifdef __CUDACC__
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif
