#include "dist/wire_format.h"

#include "base/check.h"

namespace rt {

Wire parse_wire(std::string_view name) {
  if (name == "fp32") return Wire::kFp32;
  if (name == "fp16") return Wire::kFp16;
  if (name == "bf16") return Wire::kBf16;
  RT_CHECK(false, "unknown wire type '", name, "': expected fp32, fp16 or bf16");
  return Wire::kFp32;
}

const char* wire_name(Wire wire) {
  switch (wire) {
    case Wire::kFp32:
      return "fp32";
    case Wire::kFp16:
      return "fp16";
    case Wire::kBf16:
      return "bf16";
  }
  return "?";
}

}  // namespace rt
