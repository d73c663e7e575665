// The ring with gradients on a 16-bit wire (dist.wire), under mpirun -np 2/3/4 over every
// transport: the average is within the wire type's rounding of the closed form, bit-identical on
// every rank, safe from fp16 overflow where the plain sum would overflow (Note [Wire scaling]),
// and a sharded update gathers parameters in float32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "dist/collective.h"
#include "dist/host_layout.h"
#include "dist/world.h"
#include "tests/dist/fake_hosts.h"
#include "tests/dist/test_stall.h"

namespace rt {
namespace {

// Relative rounding of one conversion: half an ulp at the type's precision.
double unit_roundoff(Wire wire) { return wire == Wire::kFp16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8); }

// True when v holds the same bits on every rank.
bool same_bits_on_every_rank(const std::vector<float>& v) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes
  for (float x : v) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    h = (h ^ u) * 1099511628211ull;
  }
  uint64_t lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, World::get().comm());
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, World::get().comm());
  return lo == hi;
}

// Rank r holds base + r * 7 + (i % 31) - 15: the average is base + 3.5 (world - 1) + (i % 31) - 15.
std::vector<float> based_contribution(int64_t count, int rank, float base) {
  std::vector<float> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(rank * 7 + static_cast<int>(i % 31) - 15);
  return v;
}

double closed_form(size_t i, int world, float base) {
  return base + 3.5 * (world - 1) + static_cast<double>(i % 31) - 15;
}

// Each of the 2(world - 1) hops rounds a partial average once: the error stays within a few
// roundings of the largest partial sum.
void expect_near_average(const std::vector<float>& v, int world, float base, Wire wire, const std::string& what) {
  const double tol = 2.0 * world * unit_roundoff(wire) * (std::abs(base) + 7.0 * world + 16.0);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < v.size(); ++i)
    if (!(std::abs(v[i] - closed_form(i, world, base)) <= tol) && bad++ == 0) first = i;
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " elements beyond " << tol << ", first at " << first << " = "
                     << (v.empty() ? 0.0f : v[first]) << ", want " << closed_form(first, world, base);
}

const char* const kTransports[] = {"shm", "tcp", "mpi"};

// The flat ring over every transport, then the two-level ring over every fake host split
// (fake_hosts.h) with TCP across hosts: the wire type applies between hosts.
std::vector<std::unique_ptr<Collective>> rings(Wire wire) {
  std::vector<std::unique_ptr<Collective>> v;
  for (const char* transport : kTransports)
    v.push_back(make_collective({.transport = *enum_named<TransportChoice>(transport), .wire = wire},
                                World::get().comm(), test_stall()));
  for (int k : fake_host_sizes(World::get().size())) v.push_back(make_fake_two_level(k, "tcp", wire));
  return v;
}

TEST(WireRing, AveragesWithinTheWireRoundingAndAgreesBitForBitOnEveryRank) {
  const World& w = World::get();
  for (Wire wire : {Wire::kFp16, Wire::kBf16})
    for (const auto& c : rings(wire)) {
      for (int64_t count : {int64_t{1}, int64_t{w.size() + 1}, int64_t{1000}, int64_t{131071 * 3 + 5}}) {
        std::vector<float> v = based_contribution(count, w.rank(), 100.0f);
        c->average(v.data(), count, {});
        const std::string what = c->describe() + ", count " + std::to_string(count);
        expect_near_average(v, w.size(), 100.0f, wire, what);
        EXPECT_TRUE(same_bits_on_every_rank(v)) << what << ": ranks ended with different averages";
      }
    }
}

// 40000 on every rank: any sum of two overflows fp16 (largest 65504); each rank's share does not.
TEST(WireRing, Fp16DividesBeforeSendingSoLargeGradientsDoNotOverflow) {
  const World& w = World::get();
  auto c = make_collective({.transport = TransportChoice::kShm, .wire = Wire::kFp16}, w.comm(), test_stall());
  std::vector<float> v = based_contribution(4099, w.rank(), 40000.0f);
  c->average(v.data(), static_cast<int64_t>(v.size()), {});
  expect_near_average(v, w.size(), 40000.0f, Wire::kFp16, c->describe() + ", values near 40000");
}

// The reduce-scatter travels in bf16, the all-gather carries parameters in float32: every rank
// ends with exactly the owner's parameters, 2 x average + 1, to the wire's rounding.
TEST(WireRing, ShardedUpdateGathersParametersInFloat32) {
  const World& w = World::get();
  for (const auto& c : rings(Wire::kBf16)) {
    const int64_t count = 131071 + 13;
    std::vector<float> g = based_contribution(count, w.rank(), 3.0f), params(static_cast<size_t>(count), 0.0f);
    const ShardUpdate update{[&](int64_t begin, int64_t n) {
                               for (int64_t i = begin; i < begin + n; ++i) params[i] = 2 * g[i] + 1;
                             },
                             params.data(),
                             {}};
    c->average(g.data(), count, {}, update);
    for (float& p : params) p = (p - 1) / 2;
    const std::string what = c->describe() + ", sharded update";
    expect_near_average(params, w.size(), 3.0f, Wire::kBf16, what);
    EXPECT_TRUE(same_bits_on_every_rank(params)) << what << ": ranks ended with different parameters";
  }
}

// Sums of values with every mantissa bit in use, formed in different orders on different ranks
// would differ in the last bits: the two-level ring must still end with one answer everywhere.
TEST(TwoLevelRing, EveryRankEndsBitIdenticalInFloat32) {
  const World& w = World::get();
  for (const auto& c : rings(Wire::kFp32)) {
    const int64_t count = 3 * 131071 + 17;
    std::vector<float> v(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) v[i] = std::sin(0.001f * static_cast<float>(i) + w.rank()) / 3.0f;
    c->average(v.data(), count, {});
    EXPECT_TRUE(same_bits_on_every_rank(v)) << c->describe() << ": ranks ended with different averages";
    double worst = 0;
    for (int64_t i = 0; i < count; ++i) {
      double want = 0;
      for (int r = 0; r < w.size(); ++r) want += std::sin(0.001f * static_cast<float>(i) + r) / 3.0f;
      worst = std::max(worst, std::abs(v[i] - want / w.size()));
    }
    EXPECT_LT(worst, 1e-6) << c->describe();
  }
}

TEST(TwoLevelRing, NamesTheHostsItRunsOver) {
  const int world = World::get().size();
  for (int k : fake_host_sizes(world)) {
    const std::string d = make_fake_two_level(k, "tcp")->describe();
    EXPECT_NE(d.find(block_layout(world, k).describe()), std::string::npos) << d;
  }
}

TEST(WireRing, MpiAllreduceRefusesANarrowWire) {
  try {
    make_collective({.allreduce = Allreduce::kMpi, .wire = Wire::kFp16}, World::get().comm(), test_stall());
    FAIL() << "MPI_Allreduce accepted dist.wire = fp16";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("applies to ringtrain's ring"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rt
