#include "nn/plan_context.h"

#include "base/check.h"

namespace rt {

Precision parse_precision(std::string_view name) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16})
    if (name == precision_name(p)) return p;
  RT_CHECK(false, "unknown precision '", name, "': expected fp32, tf32, bf16 or fp16");
  return Precision::kFp32;
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
  }
  return "?";
}

CudnnGraphUse parse_cudnn_graph_use(std::string_view value) {
  for (CudnnGraphUse u : {CudnnGraphUse::kNever, CudnnGraphUse::kWhereFaster, CudnnGraphUse::kAlways})
    if (value == cudnn_graph_use_name(u)) return u;
  RT_CHECK(false, "train.cudnn_graph is \"", value, "\"; expected off, where_faster or always");
  return CudnnGraphUse::kNever;
}

const char* cudnn_graph_use_name(CudnnGraphUse use) {
  switch (use) {
    case CudnnGraphUse::kNever:
      return "off";
    case CudnnGraphUse::kWhereFaster:
      return "where_faster";
    case CudnnGraphUse::kAlways:
      return "always";
  }
  return "?";
}

}  // namespace rt
