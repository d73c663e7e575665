// Note [Naming the straggler]: in synchronous data parallelism the slowest rank sets everyone's
// pace. Each rank keeps, per epoch, its compute time per step (batch in to last gradient ready,
// the time spent waiting for data left out), its wait for each step's averages, and how long the
// bytes of its receives from the previous ring rank took to arrive, first byte to last
// (Collective::links), leaving out the process's first step (its one-time costs). At the epoch's
// end these ride in the sum the epoch's figures already take (each rank fills its own slots, the
// others add zeros), and rank 0 judges:
// - a rank whose compute stands out from the median (kComputeMargin, kFloorS) and for which the
//   others waited (its own wait for the step's averages under half the others') held them back:
//   "rank 5 (node07) computed 38 ms a step over the median (+12%); the ring waited on it in 91%
//   of steps" (the share of steps in which it found the step's averages all but done, under 1 ms
//   and a tenth of its compute away: it came last, the others waited);
// - else a link whose bytes arrived more than kLinkFactor times slower than the median of the
//   others' (and kFloorS a step): "transfers from rank 2 (node03) to rank 3 (node04) took 3.1x the
//   others'". In a pipelined ring every rank waits for the slowest link, so waits cannot say which
//   it is; a message's first byte to its last can, as a late sender delays only the first. Send
//   waits could not either: a send completes once the socket buffer takes it (a link shaped to
//   20 Mbit/s showed the longest send waits on another link). Measured where the transport sees
//   bytes arrive, the ring's own TCP (the transport across hosts); under MPI or shared memory no
//   link is judged.
// Silent when nothing stands out. The figures go to metrics.jsonl's epoch record either way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dist/collective.h"
#include "formats/json.h"

namespace rt {

class StragglerTally {
 public:
  static constexpr int kFields = 8;  // per rank, in the epoch's sum
  // A step's compute seconds, how long it then waited for the step's averages, and the
  // collective's links so far (their receive times cumulative). The process's first step is left
  // out: it carries one-time costs (the first touch of every arena, caches filling) that can differ
  // between ranks by more than a straggler's excess over a whole short epoch.
  void add_step(double compute_s, double averages_wait_s, const Links& so_far);
  void begin_epoch();
  // This rank's figures into its slots of `all` (kFields per rank, zero elsewhere).
  void write(double* all, int rank) const;

 private:
  double compute_s_ = 0, averages_wait_s_ = 0;
  ReceiveTimes from_prev_;
  int64_t steps_ = 0, last_steps_ = 0;  // steps it came last to the averages, the others waiting
  Links last_;
  bool warmed_up_ = false;  // the process's first step has passed
};

struct StragglerVerdict {
  double compute_ms_median = 0, compute_ms_worst = 0;
  int worst_rank = -1;          // the slowest in compute
  std::string worst_link;       // "2->3": the link whose bytes arrived slowest, "" where unmeasured
  double worst_link_ratio = 0;  // its seconds a byte over the median of the others'
  double worst_link_ms = 0;     // a step's milliseconds on it over the same bytes at the others' pace
  std::string line;             // rank 0's report; "" when nothing stands out
  void add_to(Json& record) const;
  // The report asked for (SIGUSR2): line, or what the figures are where nothing stands out.
  std::string on_demand() const;
};

// What stands out, from runs without a straggler on a 2-core machine with 4 ranks (2 per core)
// beside a busy background job (docs/results/2026-11-26-stragglers.md): the slowest rank's compute
// came up to 16% over the median (up to 40% where the median was 1.5 ms; +10% with a compiler on
// both cores), while the others waited for it no more than it waited for them; the slowest link
// was up to 4.5x slower than the others a byte, but cost under 0.2 ms a step
// (docs/results/2026-11-27-links.md). A straggler must be over the median by kComputeMargin and
// kFloorS a step, and the others must have waited for it: its own wait for the step's averages
// under half the median of theirs. A link must be kLinkFactor times slower than the others and
// cost kFloorS a step.
inline constexpr double kComputeMargin = 0.20, kLinkFactor = 3.0, kFloorS = 2e-3;

// From every rank's figures (kFields each, rank order) and their hosts.
StragglerVerdict judge_stragglers(const double* all, const std::vector<std::string>& hosts);

}  // namespace rt
