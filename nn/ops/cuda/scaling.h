// cuDNN's and cuBLAS's alpha and beta, read through pointers to host floats: a call writes
// alpha x (its result) + beta x (what the output held).
#pragma once

namespace rt::cuda {

inline constexpr float kOne = 1.0f, kZero = 0.0f;

}  // namespace rt::cuda
