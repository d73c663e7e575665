#include "nn/layers/batch_norm2d.h"

#include "base/check.h"

namespace rt {

BatchNorm2d::BatchNorm2d(int64_t channels, BatchNormOptions options) : channels_(channels), options_(options) {}

std::vector<ParamSpec> BatchNorm2d::param_specs() const {
  return {{"weight", {channels_}, ParamRole::kNormScale, {Init::Kind::kConstant, zero_init_ ? 0.0 : 1.0}},
          {"bias", {channels_}, ParamRole::kNormShift, {Init::Kind::kConstant, 0.0}}};
}

std::vector<BufferSpec> BatchNorm2d::buffer_specs() const {
  return {{"running_mean", {channels_}, 0.0f}, {"running_var", {channels_}, 1.0f}};
}

bool BatchNorm2d::can_take_relu(Device device, const PlanContext& context) const {
  const bool pooled = context.bn_group && context.bn_group->size > 1;
  return context.relu_in_batch_norm && device == Device::kCpu && !statistics_frozen() && !pooled;
}

TensorSpec BatchNorm2d::plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>& need_dx) {
  RT_CHECK(x[0].shape.size() == 4 && x[0].shape[1] == channels_, "batch_norm2d(", channels_, ") got input ",
           shape_str(x[0].shape));
  op_ = make_batch_norm(options_, x[0]);
  const BatchNormGroup* group = plan_context().bn_group;
  group_ = group && group->size > 1 ? std::make_unique<GroupBatchNorm>(*group, options_, x[0]) : nullptr;
  if (!need_dx[0]) dx_scratch_ = Tensor(x[0]);
  if (frozen()) {
    dgamma_scratch_ = Tensor(plain_spec({channels_}, x[0].device));
    dbeta_scratch_ = Tensor(plain_spec({channels_}, x[0].device));
  }
  return x[0];
}

void BatchNorm2d::forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) {
  if (batch_statistics(ctx) && group_)
    group_->forward_training(*op_, *x[0], params_[0], params_[1], y, buffers_[0], buffers_[1]);
  else if (batch_statistics(ctx))
    op_->forward_training(*x[0], params_[0], params_[1], y, buffers_[0], buffers_[1]);
  else
    op_->forward_inference(*x[0], params_[0], params_[1], y, buffers_[0], buffers_[1]);
}

void BatchNorm2d::backward_impl(const std::vector<const Tensor*>& x, const Tensor&, const Tensor& dy,
                                const std::vector<Tensor*>& dx, const RunContext& ctx) {
  Tensor& dx0 = dx[0] ? *dx[0] : dx_scratch_;
  Tensor& dgamma = frozen() ? dgamma_scratch_ : grads_[0];
  Tensor& dbeta = frozen() ? dbeta_scratch_ : grads_[1];
  if (batch_statistics(ctx) && group_)
    group_->backward_training(*op_, *x[0], params_[0], params_[1], dy, dx0, dgamma, dbeta);
  else if (batch_statistics(ctx))
    op_->backward_training(*x[0], params_[0], params_[1], dy, dx0, dgamma, dbeta);
  else
    op_->backward_inference(*x[0], params_[0], params_[1], dy, dx0, dgamma, dbeta, buffers_[0], buffers_[1]);
}

}  // namespace rt
