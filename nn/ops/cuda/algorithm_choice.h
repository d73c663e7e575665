// Which cuDNN convolution algorithm a shape runs, decided once per shape from cuDNN's own timings
// (the find API) and remembered for the process, and which graph-API engines may be timed at all.
// Plain C++ without cuDNN types, so the rules are tested on machines without a GPU.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rt::cuda {

// One algorithm as cuDNN's find API timed it.
struct AlgorithmTrial {
  int algorithm = 0;
  bool ok = false;         // cuDNN ran it for this shape
  float ms = 0;            // its time
  size_t workspace = 0;    // bytes of workspace it needs
  bool transform = false;  // FFT or Winograd: fewer multiplications, larger rounding error
  int math = 0;            // the cudnnMathType_t it was timed with
};

// The fastest trial that ran, fits in workspace_limit and is allowed (transforms only with
// allow_transforms, ringtrain's "winograd" conv_algorithm); nullopt when none qualifies.
std::optional<AlgorithmTrial> choose_algorithm(const std::vector<AlgorithmTrial>& trials, size_t workspace_limit,
                                               bool allow_transforms);

// What cuDNN's graph API says of an engine's numerics (its numerical notes), in plain terms.
struct EngineNotes {
  bool known = false;                   // cuDNN reported the notes at all
  bool tensor_cores = false;            // on float32 data: TF32 inputs
  bool down_converts_inputs = false;    // rounds its inputs to a narrower type first
  bool reduced_precision_sums = false;  // accumulates in less than float32
  bool transform = false;               // FFT or Winograd
};

// What a convolution's precision promises: float32 activations keep float32 products unless
// TF32 is allowed; every precision sums in float32; transforms only with conv_algorithm
// "winograd". An engine whose notes cuDNN did not report is not trusted.
struct EngineRules {
  bool float32_data = true;
  bool allow_tf32 = false;
  bool allow_transforms = false;
};
bool engine_allowed(const EngineNotes& notes, const EngineRules& rules);

// Choices by shape key, for the life of the process (plans are made once per run).
class AlgorithmCache {
 public:
  const AlgorithmTrial* find(const std::string& key) const {
    const auto it = choices_.find(key);
    return it == choices_.end() ? nullptr : &it->second;
  }
  void insert(const std::string& key, const AlgorithmTrial& choice) { choices_[key] = choice; }
  size_t size() const { return choices_.size(); }

 private:
  std::map<std::string, AlgorithmTrial> choices_;
};

}  // namespace rt::cuda
