#include "nn/conv_algorithm.h"

#include "base/check.h"

namespace rt {

std::string_view conv_algorithm_name(ConvAlgorithm algorithm) {
  return algorithm == ConvAlgorithm::kDirect ? "direct" : "winograd";
}

ConvAlgorithm parse_conv_algorithm(std::string_view name) {
  if (name == "direct") return ConvAlgorithm::kDirect;
  if (name == "winograd") return ConvAlgorithm::kWinograd;
  RT_CHECK(false, "unknown convolution algorithm '", name, "': expected direct or winograd");
  return ConvAlgorithm::kDirect;
}

}  // namespace rt
