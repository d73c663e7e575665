// The two-level ring (Note [Two-level ring]) under the MPI tests: every rank runs on one machine,
// so its hosts are a fake split of the world into hosts of K consecutive ranks
// (RINGTRAIN_FAKE_HOST_RANKS): shared memory inside each, and TCP or MPI point-to-point across.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dist/collective.h"
#include "dist/world.h"
#include "tests/dist/test_stall.h"

namespace rt {

// Fake host sizes worth testing at this world size: one rank per host (only rings across hosts),
// one host (only the ring inside it), and 2 where that gives several hosts of several ranks.
inline std::vector<int> fake_host_sizes(int world) {
  std::vector<int> sizes = {1};
  if (world % 2 == 0 && world > 2) sizes.push_back(2);
  if (world > 1) sizes.push_back(world);
  return sizes;
}

// The two-level collective over hosts of ranks_per_host ranks. Collective over the world.
inline std::unique_ptr<Collective> make_fake_two_level(int ranks_per_host, const std::string& transport,
                                                       Wire wire = Wire::kFp32) {
  setenv("RINGTRAIN_FAKE_HOST_RANKS", std::to_string(ranks_per_host).c_str(), 1);
  const CollectiveSpec spec{Allreduce::kRing, *enum_named<TransportChoice>(transport), "", Hierarchy::kTwoLevel, wire};
  auto c = make_collective(spec, World::get().comm(), test_stall());
  unsetenv("RINGTRAIN_FAKE_HOST_RANKS");
  return c;
}

}  // namespace rt
