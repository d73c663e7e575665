#include "app/cuda_graph_replay.h"

namespace rt {

void CudaGraphReplay::replay(double loss_scale, const std::function<void()>& work) {
  if (!work_.recorded() || recorded_loss_scale_ != loss_scale) {
    work_.record(work);
    recorded_loss_scale_ = loss_scale;
    ++recordings_;
  }
  work_.replay();
  ++replayed_steps_;
}

std::string CudaGraphReplay::covers() const {
  if (!enabled_) return "";
  return with_backward_ ? "forward, loss and backward" : "forward and loss";
}

}  // namespace rt
