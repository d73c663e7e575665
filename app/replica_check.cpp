#include "app/replica_check.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "base/check.h"
#include "nn/ops/agreed_reductions.h"

namespace rt {
namespace {

// "rank 3 (node07)", "ranks 0, 1 and 2 (node01, node02)".
std::string ranks_text(const std::vector<int>& ranks, const std::vector<std::string>& hosts) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  std::vector<std::string> where;
  for (size_t i = 0; i < ranks.size(); ++i) {
    text += str_cat(i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ", ranks[i]);
    const std::string& host = hosts.at(static_cast<size_t>(ranks[i]));
    if (std::find(where.begin(), where.end(), host) == where.end()) where.push_back(host);
  }
  text += " (";
  for (size_t i = 0; i < where.size(); ++i) text += str_cat(i == 0 ? "" : ", ", where[i]);
  return text + ")";
}

// What part of the model `a` and `b` differ in: "parameters and momentum".
std::string parts_differing(const ReplicaPrint& a, const ReplicaPrint& b) {
  std::vector<std::string> parts;
  if (a.parameters != b.parameters) parts.emplace_back("parameters");
  if (a.momentum != b.momentum) parts.emplace_back("momentum");
  if (a.loss_scale != b.loss_scale) parts.emplace_back("loss scale");
  if (a.grad_norm != b.grad_norm) parts.emplace_back("gradient norm");
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i)
    text += str_cat(i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ", parts[i]);
  return text;
}

}  // namespace

ReplicaPrint replica_print(Graph& graph, Optimizer& optimizer, double loss_scale, double grad_norm,
                           bool with_momentum) {
  ReplicaPrint p;
  p.parameters = fingerprint(graph.device(), graph.param_arena(), graph.arena_floats());
  for (size_t k = 0; with_momentum && k < optimizer.state_count(); ++k)  // one state: its own print
    p.momentum =
        p.momentum * 1099511628211ull ^ fingerprint(graph.device(), optimizer.state_arena(k), graph.grad_floats());
  std::memcpy(&p.loss_scale, &loss_scale, sizeof loss_scale);  // the bits, as the rest
  std::memcpy(&p.grad_norm, &grad_norm, sizeof grad_norm);
  return p;
}

std::string replica_difference(const std::vector<ReplicaPrint>& prints, const std::vector<std::string>& hosts) {
  // The groups of ranks holding the same model, largest first (ties: the one with the lowest rank).
  std::vector<std::vector<int>> groups;
  for (int r = 0; r < static_cast<int>(prints.size()); ++r) {
    auto same = std::find_if(groups.begin(), groups.end(),
                             [&](const std::vector<int>& g) { return prints[static_cast<size_t>(g[0])] == prints[r]; });
    if (same == groups.end())
      groups.push_back({r});
    else
      same->push_back(r);
  }
  if (groups.size() == 1) return "";
  std::stable_sort(groups.begin(), groups.end(),
                   [](const std::vector<int>& a, const std::vector<int>& b) { return a.size() > b.size(); });
  const std::vector<int>& most = groups[0];
  const ReplicaPrint& common = prints[static_cast<size_t>(most[0])];
  const bool majority = 2 * most.size() > prints.size();
  std::string text;
  if (majority) {
    for (size_t g = 1; g < groups.size(); ++g)
      text += str_cat(g == 1 ? "" : "; ", ranks_text(groups[g], hosts), groups[g].size() == 1 ? " differs" : " differ",
                      " from the majority, ", ranks_text(most, hosts), ", in ",
                      parts_differing(prints[static_cast<size_t>(groups[g][0])], common));
  } else {
    text = str_cat("the ranks hold ", groups.size(), " different models and no majority says which is right: ");
    for (size_t g = 0; g < groups.size(); ++g) text += str_cat(g == 0 ? "" : " / ", ranks_text(groups[g], hosts));
    text += str_cat(", which differ in ", parts_differing(prints[static_cast<size_t>(groups[1][0])], common));
  }
  return text;
}

void check_replicas(const ReplicaPrint& mine, const World& world, const std::string& when, const StallPolicy* stall) {
  if (world.size() == 1) return;
  const CollectiveWatch watch{stall, "the replica check " + when};
  const std::vector<uint64_t> all =
      world.allgather(std::vector<uint64_t>{mine.parameters, mine.momentum, mine.loss_scale, mine.grad_norm}, watch);
  std::vector<ReplicaPrint> prints(static_cast<size_t>(world.size()));
  for (size_t r = 0; r < prints.size(); ++r)
    prints[r] = ReplicaPrint{all[4 * r], all[4 * r + 1], all[4 * r + 2], all[4 * r + 3]};
  if (std::all_of(prints.begin(), prints.end(), [&](const ReplicaPrint& p) { return p == prints[0]; })) return;
  // Every rank saw the same prints, so every rank takes this path: the host names' allgather is
  // on every rank's schedule too.
  const std::string difference = replica_difference(prints, world.allgather(world.host(), watch));
  throw Error(str_cat("the ranks' models differ ", when, ": ", difference,
                      ". A faulty CPU, GPU or memory can do this, or a reduction whose order is not fixed. "
                      "The job stops; nothing of this state is saved, and the last checkpoint stands"));
}

}  // namespace rt
