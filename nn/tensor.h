// Tensors: a logical shape, a device, a physical layout and shared storage.
// Layout is opaque outside the backend that made it: nullptr means plain row-major (NCHW, (N, K),
// OIHW); anything else is the memory format a backend primitive chose (on the CPU, oneDNN's
// blocked nChw16c and friends). Callers may rely on: bytes() covers the whole physical buffer,
// and tensors with equal specs can be used interchangeably by the op that planned them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/device.h"

namespace rt {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "(8, 64, 56, 56)"
// The multi-index of row-major position `flat` in `shape`: "[0, 3, 1, 2]" (for error messages).
std::string index_str(int64_t flat, const Shape& shape);

// A backend's physical layout. Two layouts are interchangeable only when same_as() says so.
class Layout {
 public:
  virtual ~Layout() = default;
  virtual size_t bytes() const = 0;
  virtual bool same_as(const Layout& other) const = 0;
  virtual std::string describe() const = 0;  // for messages, e.g. "aBcd16b"
};

// What a tensor will be: the unit in which ops announce their inputs and outputs at plan time.
struct TensorSpec {
  Shape shape;
  std::shared_ptr<const Layout> layout;  // nullptr: plain row-major float32
  Device device = Device::kCpu;

  bool is_plain() const { return layout == nullptr; }
  size_t bytes() const;
  bool same_as(const TensorSpec& other) const;
  std::string describe() const;  // "(8, 64, 28, 28) aBcd16b cpu"
};

TensorSpec plain_spec(Shape shape, Device device = Device::kCpu);

class Tensor {
 public:
  Tensor() = default;
  // Fresh storage for `spec`, zero-filled (padding in blocked layouts must read as zero).
  explicit Tensor(TensorSpec spec);
  // A view of memory owned elsewhere (an arena slice); `owner` keeps it alive.
  Tensor(TensorSpec spec, float* data, std::shared_ptr<void> owner);

  const TensorSpec& spec() const { return spec_; }
  const Shape& shape() const { return spec_.shape; }
  Device device() const { return spec_.device; }
  bool is_plain() const { return spec_.is_plain(); }
  bool defined() const { return data_ != nullptr || spec_.bytes() == 0; }
  int64_t numel() const { return rt::numel(spec_.shape); }
  size_t bytes() const { return spec_.bytes(); }
  int64_t dim(size_t i) const { return spec_.shape.at(i); }

  float* data() { return data_; }
  const float* data() const { return data_; }

  void zero();

 private:
  TensorSpec spec_;
  float* data_ = nullptr;
  std::shared_ptr<void> owner_;
};

// A plain copy of plain tensor t on `device` (the one named way data crosses devices).
Tensor to_device(const Tensor& t, Device device);

}  // namespace rt
