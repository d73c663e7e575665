// Note [Gradient accumulation] (app/train_step.cpp): the micro-batches' gradients before the last
// one's, summed, and the grad-ready hook that, in the last one's backward, adds each parameter's
// sum into its gradient as backward finishes it and only then hands it to the reducer.
#pragma once

#include "dist/grad_reducer.h"
#include "nn/graph.h"

namespace rt {

class GradientAccumulation {
 public:
  // Hooks `graph`'s grad-ready; `reducer` is null on one rank. Both must outlive this.
  GradientAccumulation(Graph& graph, GradReducer* reducer);
  GradientAccumulation(const GradientAccumulation&) = delete;  // the hook holds `this`
  GradientAccumulation& operator=(const GradientAccumulation&) = delete;
  // The backward about to run is the last micro-batch's, or not.
  void set_last(bool last) { last_ = last; }
  // After a backward before the last: the sum (+)= the gradient arena (= for the `first`).
  void add(bool first, Timeline* timeline);

 private:
  Graph& graph_;
  Tensor sum_;
  bool last_ = true;
};

}  // namespace rt
