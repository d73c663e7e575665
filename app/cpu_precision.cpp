#include "app/cpu_precision.h"

#include "app/consistency.h"
#include "base/check.h"
#include "nn/cpu_bf16.h"

namespace rt {
namespace {

bool bf16_on_cpu(const TrainConfig& t) { return t.device == Device::kCpu && t.precision == Precision::kBf16; }

}  // namespace

void check_cpu_precision(const TrainConfig& t) {
  if (!bf16_on_cpu(t)) return;
  const CpuBf16 cpu = cpu_bf16();
  const std::string needs = str_cat("train.precision = \"bf16\" needs a CPU with bfloat16 units (AVX512_BF16 or AMX), ",
                                    "and oneDNN runs this one's ", cpu.isa, " instructions, where ");
  RT_CHECK(cpu.runs, needs, "oneDNN 2.6 has no bf16 at all (not even emulated, which needs AVX-512): set ",
           "train.precision = \"fp32\"");
  RT_CHECK(cpu.native || t.bf16_emulation, needs,
           "it would emulate bf16 several times slower than float32: set train.precision = \"fp32\", or ",
           "train.bf16_emulation = true to run the emulation anyway");
}

void check_cpu_precision_on_all_ranks(const TrainConfig& t, const World& world) {
  check_cpu_precision(t);
  if (!bf16_on_cpu(t)) return;
  const CpuBf16 cpu = cpu_bf16();
  // Averaged gradients keep the replicas identical whatever each rank's kernels, but an emulating
  // rank computes several times slower, and every step would wait for it.
  require_same_on_all_ranks("CPU", {{"bf16 arithmetic", cpu.native ? "in hardware" : "emulated by oneDNN"}}, world);
}

}  // namespace rt
