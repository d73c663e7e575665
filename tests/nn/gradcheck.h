// Finite-difference checking of a Layer's backward: L = sum(r * y) for a fixed random r, so
// dL/dy = r; the layer's dx and parameter gradients are compared with central differences of L
// evaluated in double. Inputs can be given in any layout (plain values are reordered in).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "nn/layer.h"

namespace rt::testing {

struct GradcheckOptions {
  double step = 1e-2;     // finite-difference step in input/parameter units
  double abs_tol = 2e-3;  // |analytic - numeric| <= abs_tol + rel_tol * |numeric|
  double rel_tol = 1e-2;
  int max_probes = 48;  // elements checked per tensor (spread over the tensor)
  bool training = true;
  // Plain input values; default uniform in [-1, 1]. Used to keep inputs away from kinks.
  std::function<float(size_t input, int64_t index, float uniform)> input_value;
};

struct GradcheckReport {
  double max_abs_err = 0, max_rel_err = 0;
  std::string worst;  // "dx0[17]" or "dweight[3]": where the largest error was
  int failures = 0;
  std::string first_failure;
};

GradcheckReport gradcheck(Layer& layer, const std::vector<TensorSpec>& x_specs, const GradcheckOptions& options = {});

// A tensor of `spec` holding the plain row-major `values` (reordered in when spec is blocked).
Tensor tensor_from_plain(const TensorSpec& spec, const std::vector<float>& values);

// A blocked activation layout for `shape`, as a oneDNN convolution would produce it.
TensorSpec blocked_spec(const Shape& shape);

}  // namespace rt::testing
