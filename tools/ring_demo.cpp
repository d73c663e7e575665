#include "tools/ring_demo.h"

#include <sstream>
#include <vector>

#include "base/check.h"
#include "dist/ring_schedule.h"
#include "tools/demo_text.h"

namespace rt {
namespace {

using Buffer = std::vector<double>;

std::string values(const Buffer& b, ChunkRange c) { return demo_values(b, c.begin, c.count); }

void print_ranks(std::ostream& os, const std::vector<Buffer>& ranks, int64_t elements) {
  const int P = static_cast<int>(ranks.size());
  for (int r = 0; r < P; ++r) {
    os << "  rank " << r;
    for (int c = 0; c < P; ++c) os << " | c" << c << " " << values(ranks[r], chunk_range(elements, P, c));
    os << "\n";
  }
}

}  // namespace

std::string ring_demo(int P, int64_t N) {
  RT_CHECK(P >= 2 && P <= 8, "ring-demo: --ranks must be 2 to 8 (small enough to follow by eye), got ", P);
  RT_CHECK(N >= 1 && N <= 32, "ring-demo: --elements must be 1 to 32, got ", N);
  std::ostringstream os;
  os << "ring-demo: " << P << " ranks, " << N << " elements, chunks";
  for (int c = 0; c < P; ++c) {
    const ChunkRange r = chunk_range(N, P, c);
    os << " c" << c << " = [" << r.begin << ", " << r.begin + r.count << ")";
  }
  os << "\nrank r starts with 10 r + i at element i; every rank must end with the average " << 5 * (P - 1)
     << " + i\nstart\n";
  std::vector<Buffer> ranks(static_cast<size_t>(P), Buffer(static_cast<size_t>(N)));
  for (int r = 0; r < P; ++r)
    for (int64_t i = 0; i < N; ++i) ranks[r][i] = 10.0 * r + static_cast<double>(i);
  print_ranks(os, ranks, N);

  std::vector<int64_t> sent(static_cast<size_t>(P), 0);
  const int steps = ring_step_count(P);
  for (int s = 0; s < steps; ++s) {
    const bool gathering = s >= P - 1;
    os << "step " << s + 1 << " of " << steps << ", " << (gathering ? "all-gather" : "reduce-scatter") << "\n";
    // Every rank sends at once: what goes on the wire is each sender's chunk before the step.
    std::vector<Buffer> before = ranks;
    for (int r = 0; r < P; ++r) {
      const RingStep step = ring_step(r, P, s);
      const int to = ring_next(r, P);
      const RingStep theirs = ring_step(to, P, s);
      RT_ASSERT(theirs.recv_chunk == step.send_chunk);
      const ChunkRange c = chunk_range(N, P, step.send_chunk);
      Buffer& dst = ranks[to];
      for (int64_t i = c.begin; i < c.begin + c.count; ++i) {
        dst[i] = theirs.reduce ? dst[i] + before[r][i] : before[r][i];
        if (theirs.final_reduce) dst[i] /= P;
      }
      sent[r] += c.count;
      os << "  rank " << r << " sends c" << step.send_chunk << " to rank " << to << ", which "
         << (!theirs.reduce        ? "copies it"
             : theirs.final_reduce ? "adds it and divides by " + std::to_string(P)
                                   : std::string("adds it"))
         << ": c" << step.send_chunk << " = " << values(dst, c) << "\n";
    }
    if (s == P - 2) {
      os << "  reduce-scatter done:";
      for (int r = 0; r < P; ++r)
        os << (r ? "," : "") << " rank " << r << " holds the average of c" << owned_chunk(r, P);
      os << "\n";
      print_ranks(os, ranks, N);
    }
  }
  os << "end\n";
  print_ranks(os, ranks, N);
  os << "sent:";
  for (int r = 0; r < P; ++r) os << (r ? "," : "") << " rank " << r << " " << sent[r];
  std::ostringstream per_rank;
  per_rank.precision(3);
  per_rank << 2.0 * (P - 1) / P * static_cast<double>(N);
  os << " elements; 2(P-1)/P x N = " << per_rank.str() << " per rank on average, whatever P is\n";
  return os.str();
}

}  // namespace rt
