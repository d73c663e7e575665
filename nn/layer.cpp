#include "nn/layer.h"

#include "base/check.h"

namespace rt {

TensorSpec Layer::plan(const std::vector<TensorSpec>& x, const std::vector<bool>& need_dx, const PlanContext& context) {
  RT_CHECK(arity() == 0 ? !x.empty() : x.size() == arity(), kind(), " takes ",
           arity() == 0 ? "one or more" : std::to_string(arity()), " input(s), got ", x.size());
  RT_ASSERT(params_.size() == param_specs().size() && buffers_.size() == buffer_specs().size());
  x_specs_ = x;
  context_ = context;
  y_spec_ = plan_impl(x, need_dx);
  return y_spec_;
}

void Layer::forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) {
  begin_forward(ctx);
  forward_work(x, y, ctx);
}

void Layer::forward_work(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) {
  RT_ASSERT(x.size() == x_specs_.size());
  for (size_t i = 0; i < x.size(); ++i) RT_ASSERT(x[i]->spec().same_as(x_specs_[i]));
  RT_ASSERT(y.spec().same_as(y_spec_));
  forward_impl(x, y, ctx);
}

void Layer::backward(const std::vector<const Tensor*>& x, const Tensor& y, const Tensor& dy,
                     const std::vector<Tensor*>& dx, const RunContext& ctx) {
  RT_ASSERT(x.size() == x_specs_.size() && dx.size() == x.size());
  RT_ASSERT(dy.spec().same_as(y_spec_));
  for (size_t i = 0; i < dx.size(); ++i) RT_ASSERT(!dx[i] || dx[i]->spec().same_as(x_specs_[i]));
  backward_impl(x, y, dy, dx, ctx);
}

void Layer::bind(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> buffers) {
  params_ = std::move(params);
  grads_ = std::move(grads);
  buffers_ = std::move(buffers);
}

}  // namespace rt
