// Start-up agreement between ranks: rank 0's weights and buffers are broadcast to all, and every
// rank checks that the resolved config and the model are the same everywhere, refusing to start
// with the differing key or tensor and the ranks that differ. Collective: every rank calls these
// in the same order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dist/world.h"
#include "nn/graph.h"

namespace rt {

// (name, value) pairs that must be equal on every rank; `kind` names them in the error
// ("config key", "model tensor").
void require_same_on_all_ranks(const std::string& kind, const std::vector<std::pair<std::string, std::string>>& items,
                               const World& world);

// Every resolved config key except train.threads (hosts may differ in cores).
std::vector<std::pair<std::string, std::string>> config_items(const std::string& resolved_toml);
// Every parameter and buffer, by name, with its shape.
std::vector<std::pair<std::string, std::string>> model_items(const Graph& graph);

void broadcast_model_state(Graph& graph, const World& world);

// MPI moves host memory: runs fn on data[0, n) where it is on the CPU, or on a host copy that is
// copied back afterwards when it is on the GPU.
void on_host(float* data, int64_t n, Device device, const std::function<void(float*)>& fn);

}  // namespace rt
