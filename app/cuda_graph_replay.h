// train.cuda_graph (Note [CUDA graph steps] in nn/device.h): the recording of a step's device work
// and when to replay it. On one rank the recording covers forward, the loss and backward; on
// several it stops before backward, which the reducer listens to layer by layer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "nn/device.h"

namespace rt {

class CudaGraphReplay {
 public:
  CudaGraphReplay(bool enabled, bool with_backward) : enabled_(enabled), with_backward_(with_backward) {}

  // Whether this step replays: never while profiling (its waits split the step), nor at the first
  // step of a run, whose work allocates and chooses algorithms.
  bool replays(bool profiling) const { return enabled_ && !profiling && steps_ > 0; }
  // Whether a replayed step's backward is in the recording.
  bool covers_backward() const { return with_backward_; }
  // Records `work` where there is no recording for this loss scale (fp16 changes its scale on
  // overflow and after 2000 good steps; a recording holds the scale it was made with), then
  // replays the recording.
  void replay(double loss_scale, const std::function<void()>& work);
  void step_done() { ++steps_; }

  // What a replay covers ("forward and loss", "forward, loss and backward"), "" when disabled.
  std::string covers() const;
  int64_t replayed_steps() const { return replayed_steps_; }
  int64_t recordings() const { return recordings_; }

 private:
  bool enabled_, with_backward_;
  CudaGraph work_;
  double recorded_loss_scale_ = 0;
  int64_t steps_ = 0;
  int64_t replayed_steps_ = 0, recordings_ = 0;
};

}  // namespace rt
