#include "nn/cpu_bf16.h"

#include <oneapi/dnnl/dnnl.hpp>

namespace rt {
namespace {

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "another instruction set";
  }
}

}  // namespace

CpuBf16 cpu_bf16() {
  using i = dnnl::cpu_isa;
  const i isa = dnnl::get_effective_cpu_isa();
  const bool native = isa == i::avx512_core_bf16 || isa == i::avx512_core_amx;
  return {native || isa == i::avx512_core || isa == i::avx512_core_vnni, native, isa_name(isa)};
}

}  // namespace rt
