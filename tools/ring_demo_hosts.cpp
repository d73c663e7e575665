#include "tools/ring_demo_hosts.h"

#include <sstream>
#include <vector>

#include "base/check.h"
#include "dist/host_layout.h"
#include "tools/demo_text.h"

namespace rt {
namespace {

using Buffer = std::vector<double>;

std::string steps(int n) { return str_cat(n, n == 1 ? " step" : " steps"); }

void print_ranks(std::ostream& os, const std::vector<Buffer>& ranks, const HostLayout& layout) {
  for (int r = 0; r < layout.world(); ++r)
    os << "  host " << layout.host_of_rank[r] << " rank " << r << " | "
       << demo_values(ranks[r], 0, static_cast<int64_t>(ranks[r].size())) << "\n";
}

// One phase: steps [first, end) of the flat ring over each of `rings` (world ranks in ring order)
// on the range `within` of the buffers, its chunks named prefix + index. Final reduce-scatter
// steps divide by `divide` (1: none). Counts each sender's elements into sent.
void play(std::ostream& os, std::vector<Buffer>& ranks, const std::vector<std::vector<int>>& rings,
          const std::vector<ChunkRange>& within, const std::vector<std::string>& prefix, int first, int end, int divide,
          std::vector<int64_t>& sent) {
  for (int s = first; s < end; ++s) {
    bool any = false;
    std::vector<Buffer> before = ranks;  // every rank sends at once
    for (size_t g = 0; g < rings.size(); ++g) {
      const std::vector<int>& ring = rings[g];
      const int p = static_cast<int>(ring.size());
      if (p == 1 || s >= ring_step_count(p)) continue;
      if (!any) os << "  step " << s - first + 1 << "\n";
      any = true;
      for (int q = 0; q < p; ++q) {
        const RingStep step = ring_step(q, p, s);
        const int to = ring_next(q, p);
        const RingStep theirs = ring_step(to, p, s);
        const ChunkRange c = chunk_range(within[g].count, p, step.send_chunk);
        const int64_t at = within[g].begin + c.begin;
        Buffer& dst = ranks[ring[to]];
        for (int64_t i = at; i < at + c.count; ++i) {
          dst[i] = theirs.reduce ? dst[i] + before[ring[q]][i] : before[ring[q]][i];
          if (theirs.final_reduce && divide > 1) dst[i] /= divide;
        }
        sent[ring[q]] += c.count;
        const std::string name = str_cat(prefix[g], step.send_chunk);
        os << "    rank " << ring[q] << " sends " << name << " to rank " << ring[to] << ", which "
           << (!theirs.reduce                      ? "copies it"
               : theirs.final_reduce && divide > 1 ? str_cat("adds it and divides by ", divide)
                                                   : std::string("adds it"))
           << ": " << name << " = " << demo_values(dst, at, c.count) << "\n";
      }
    }
  }
}

}  // namespace

std::string ring_demo_hosts(int P, int H, int64_t N) {
  RT_CHECK(P >= 2 && P <= 8, "ring-demo: --ranks must be 2 to 8 (small enough to follow by eye), got ", P);
  RT_CHECK(H >= 1 && H <= P && P % H == 0,
           "ring-demo: --hosts must divide --ranks (the two-level ring needs as many "
           "ranks on every host), got ",
           H, " hosts for ", P, " ranks");
  RT_CHECK(N >= 1 && N <= 32, "ring-demo: --elements must be 1 to 32, got ", N);
  const int L = P / H;
  const HostLayout layout = block_layout(P, L);
  std::vector<TwoLevelPlace> place;
  for (int r = 0; r < P; ++r) place.push_back(two_level_place(layout, r));
  std::ostringstream os;
  os << "ring-demo: the two-level ring, " << layout.describe() << ", " << N << " elements\n"
     << "rank r starts with 10 r + i at element i; every rank must end with the average " << 5 * (P - 1)
     << " + i\nchunks inside a host: ";
  for (int c = 0; c < L; ++c) {
    const ChunkRange r = chunk_range(N, L, c);
    os << (c ? " " : "") << "c" << c << " = [" << r.begin << ", " << r.begin + r.count << ")";
  }
  os << "\nstart\n";
  std::vector<Buffer> ranks(static_cast<size_t>(P), Buffer(static_cast<size_t>(N)));
  for (int r = 0; r < P; ++r)
    for (int64_t i = 0; i < N; ++i) ranks[r][i] = 10.0 * r + static_cast<double>(i);
  print_ranks(os, ranks, layout);

  std::vector<int64_t> inside(static_cast<size_t>(P), 0), across(static_cast<size_t>(P), 0);
  std::vector<std::vector<int>> local_rings = layout.ranks_of_host, cross_rings;
  const std::vector<ChunkRange> whole(static_cast<size_t>(H), ChunkRange{0, N});
  const std::vector<std::string> plain(static_cast<size_t>(H), "c");
  std::vector<ChunkRange> shares;
  std::vector<std::string> share_names;
  for (int l = 0; l < L; ++l) {
    const TwoLevelPlace& p = place[layout.ranks_of_host[0][l]];
    cross_rings.push_back(p.cross_ring);
    shares.push_back(host_share(N, p));
    share_names.push_back(str_cat("c", owned_chunk(l, L), "."));
  }

  os << "phase 1, inside each host: reduce-scatter of the whole buffer (" << steps(L - 1) << ")\n";
  if (L == 1) os << "  (one rank per host: nothing to do)\n";
  play(os, ranks, local_rings, whole, plain, 0, L - 1, 1, inside);
  os << "  done: each rank holds its host's sum of one chunk, its host share:";
  for (int l = 0; l < L; ++l) os << (l ? "," : "") << " local rank " << l << " c" << owned_chunk(l, L);
  os << "\n";
  print_ranks(os, ranks, layout);

  os << "phase 2, across hosts: a ring among the ranks of equal local rank on their host share, "
     << "divided by " << P << " (" << steps(ring_step_count(H)) << "); share cK is cut into cK.0 .. cK." << H - 1
     << "\n";
  if (H == 1) os << "  (one host: the rings across hosts have one rank; each divides its share by " << P << ")\n";
  if (H == 1)
    for (int r = 0; r < P; ++r) {
      const ChunkRange s = host_share(N, place[r]);
      for (int64_t i = s.begin; i < s.begin + s.count; ++i) ranks[r][i] /= P;
    }
  play(os, ranks, cross_rings, shares, share_names, 0, ring_step_count(H), P, across);
  print_ranks(os, ranks, layout);

  os << "phase 3, inside each host: all-gather of the host shares (" << steps(L - 1) << ")\n";
  if (L == 1) os << "  (one rank per host: nothing to do)\n";
  play(os, ranks, local_rings, whole, plain, L - 1, ring_step_count(L), 1, inside);
  os << "end\n";
  print_ranks(os, ranks, layout);

  os << "sent inside hosts:";
  for (int r = 0; r < P; ++r) os << (r ? "," : "") << " rank " << r << " " << inside[r];
  os << "\nsent across hosts:";
  int64_t total_across = 0;
  for (int r = 0; r < P; ++r) {
    os << (r ? "," : "") << " rank " << r << " " << across[r];
    total_across += across[r];
  }
  // The flat ring over the same ranks: what the ranks whose successor is on another host send.
  int64_t flat_across = 0;
  for (int r = 0; r < P; ++r)
    if (layout.host_of_rank[r] != layout.host_of_rank[ring_next(r, P)])
      for (int s = 0; s < ring_step_count(P); ++s)
        flat_across += chunk_range(N, P, ring_step(r, P, s).send_chunk).count;
  std::ostringstream ratio;
  ratio.precision(3);
  if (total_across > 0) ratio << static_cast<double>(flat_across) / static_cast<double>(total_across);
  os << "\nacross hosts in all: " << total_across << " elements in " << steps(ring_step_count(H))
     << "; the flat ring over the same ranks: " << flat_across << " in " << steps(ring_step_count(P))
     << (total_across > 0 ? str_cat(" (", ratio.str(), "x the bytes)") : std::string()) << "\n";
  return os.str();
}

}  // namespace rt
