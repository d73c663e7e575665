// Whether this CPU computes bfloat16, and how (Note [CPU bfloat16]). oneDNN 2.6, which the CPU
// ops run on, has bf16 kernels only on CPUs with AVX-512 (avx512_core): with AVX512_BF16 or AMX
// in hardware; on AVX-512 without them it emulates the bf16 dot product, several times slower
// than float32; below AVX-512 (AVX2 only) it has none.
//
// Note [CPU bfloat16]: with train.precision = "bf16" on the CPU, convolutions compute from bf16
// copies of their inputs and weights with float32 accumulation, as PyTorch's CPU autocast does.
// Activations and their gradients between convolutions are stored in bf16 (in the layout the
// convolution chose), and the ops that follow a convolution (batch norm, ReLU, pooling, add,
// concat, dropout) keep it, each computing in float32 inside. Flatten returns to plain float32:
// fully connected layers read bf16 copies of x, w and dy and write float32, so logits and the
// loss are float32. Parameters, their gradients, the optimizer's state and batch-norm statistics
// stay float32 ("master weights"), so the ring, PowerSGD, clipping, LARS, checkpoints and the
// replica check see what they see under fp32. oneDNN's kernels, and so the rounding, follow the
// instruction set: ranks of one set stay bit-identical.
#pragma once

#include <string>

namespace rt {

struct CpuBf16 {
  bool runs = false;    // oneDNN has bf16 kernels here (avx512_core or later), native or emulated
  bool native = false;  // AVX512_BF16 or AMX, as oneDNN will run it (ONEDNN_MAX_CPU_ISA caps it)
  std::string isa;      // the instruction set oneDNN runs: "avx512_core_bf16", "avx2", ...
};
CpuBf16 cpu_bf16();

}  // namespace rt
