// Note [Replica check]: data-parallel training is right only while every rank holds the same
// model. The ranks keep it so by construction (one broadcast at the start, then the same averaged
// gradients, and reductions that every rank computes alike, Note [Agreed reductions]), but a
// faulty core, GPU or memory can change one rank's copy without a word. So every
// dist.check_replicas_every_steps steps, and before every save, each rank fingerprints its
// parameters, momentum and loss scale (nn/ops/agreed_reductions.h: on the rank's device), and
// the last step's gradient norm under train.clip_grad_norm (the norm's last bits drift first,
// before the float clip factor shows them), and the ranks compare the fingerprints in one
// allgather. On a difference every rank stops with the
// same message, naming the step and the ranks whose model differs from the one most ranks hold;
// a save stops before anything is written, so the last good checkpoint stands.
//
// Under dist.sharded_update each rank holds the momentum of its own share only between saves:
// the periodic check then compares parameters and loss scale, and the save's check, after the
// momentum is gathered, all three.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dist/world.h"
#include "nn/graph.h"
#include "nn/optim/optimizer.h"

namespace rt {

struct ReplicaPrint {
  uint64_t parameters = 0, momentum = 0;   // momentum 0: not compared
  uint64_t loss_scale = 0, grad_norm = 0;  // their bits
  bool operator==(const ReplicaPrint&) const = default;
};

// with_momentum: the optimizer's state too (its momentum, for SGD and LARS).
ReplicaPrint replica_print(Graph& graph, Optimizer& optimizer, double loss_scale, double grad_norm, bool with_momentum);

// What differs among the ranks' prints (indexed by rank), for the message: "" when all are the
// same; else which ranks hold which model, the ranks apart from the largest group first named.
// `hosts` (indexed by rank) name where each rank runs.
std::string replica_difference(const std::vector<ReplicaPrint>& prints, const std::vector<std::string>& hosts);

// Compares this rank's print with every other's (one allgather of four words per rank) and
// throws rt::Error naming `when` ("after step 120", "before saving after step 120") and the
// ranks that differ. Collective: every rank calls it at the same point of its schedule.
// Its collectives wait as `stall` says (Note [Watched collectives]).
void check_replicas(const ReplicaPrint& mine, const World& world, const std::string& when,
                    const StallPolicy* stall = nullptr);

}  // namespace rt
