// train.precision = "bf16" on the CPU (Note [CPU bfloat16] in nn/cpu_bf16.h) runs only where the
// CPU has bfloat16 units, or where train.bf16_emulation asks for oneDNN's emulation by name (on
// AVX-512 without them; below AVX-512 oneDNN 2.6 has no bf16).
#pragma once

#include "config/config.h"
#include "dist/world.h"

namespace rt {

// rt::Error naming this CPU's instruction set and what to set, unless the CPU can run `t`.
void check_cpu_precision(const TrainConfig& t);
// The same on every rank, and then every rank computes bf16 the same way (in hardware or
// emulated); a job whose ranks differ is refused naming them. Collective.
void check_cpu_precision_on_all_ranks(const TrainConfig& t, const World& world);

}  // namespace rt
