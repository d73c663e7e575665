#include "nn/tensor.h"

#include <cstring>
#include <sstream>

#include "base/check.h"

namespace rt {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ")";
  return os.str();
}

std::string index_str(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < idx.size(); ++d) os << (d ? ", " : "") << idx[d];
  os << "]";
  return os.str();
}

size_t TensorSpec::bytes() const {
  return layout ? layout->bytes() : static_cast<size_t>(numel(shape)) * sizeof(float);
}

bool TensorSpec::same_as(const TensorSpec& other) const {
  if (shape != other.shape || device != other.device) return false;
  if (!layout || !other.layout) return !layout && !other.layout;
  return layout->same_as(*other.layout);
}

std::string TensorSpec::describe() const {
  return str_cat(shape_str(shape), " ", layout ? layout->describe() : "plain", " ", name_of(device));
}

TensorSpec plain_spec(Shape shape, Device device) { return TensorSpec{std::move(shape), nullptr, device}; }

Tensor::Tensor(TensorSpec spec) : spec_(std::move(spec)) {
  owner_ = allocate_zeroed(spec_.device, spec_.bytes());
  data_ = static_cast<float*>(owner_.get());
}

Tensor::Tensor(TensorSpec spec, float* data, std::shared_ptr<void> owner)
    : spec_(std::move(spec)), data_(data), owner_(std::move(owner)) {}

void Tensor::zero() {
  if (data_) zero_bytes(data_, spec_.device, bytes());
}

Tensor to_device(const Tensor& t, Device device) {
  RT_CHECK(t.is_plain(), "to_device copies plain tensors; reorder ", t.spec().describe(), " to plain first");
  Tensor out(plain_spec(t.shape(), device));
  copy_bytes(out.data(), device, t.data(), t.device(), t.bytes());
  return out;
}

}  // namespace rt
