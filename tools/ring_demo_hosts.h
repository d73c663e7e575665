// `ringtrain ring-demo --ranks P --hosts H --elements N`: the two-level ring (Note [Two-level
// ring] in dist/host_layout.h) played out in one process on small integers, phase by phase and
// step by step, from the very functions the trainer's two-level ring runs: the host layout, the
// host shares and the flat ring's schedule on each sub-ring.
#pragma once

#include <cstdint>
#include <string>

namespace rt {

// The demo's text, with P / H ranks on each of H hosts, placed host by host. Rank r starts with
// 10 r + i at element i, so every rank must end with the average 5 (P - 1) + i; the text ends with
// the elements each rank sent inside its host and across hosts, beside the flat ring's.
// rt::Error unless 2 <= P <= 8, 1 <= H <= P, H divides P and 1 <= N <= 32.
std::string ring_demo_hosts(int ranks, int hosts, int64_t elements);

}  // namespace rt
