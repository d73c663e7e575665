// ExchangePrimitives (dist/exchange_primitives.h) on GPU memory: every addition and conversion a
// kernel on the communication stream, after the exchange that brought its bytes, so a step's
// reduction follows its transfer and precedes the next step's without any host synchronisation.
#pragma once

#include <cuda_runtime.h>

#include "dist/cuda/nccl_comm.cuh"
#include "dist/exchange_primitives.h"

namespace rt {

class GpuExchangePrimitives final : public ExchangePrimitives {
 public:
  GpuExchangePrimitives(DeviceExchange& exchange, cudaStream_t stream)
      : ExchangePrimitives(exchange, stream), s_(stream) {}
  void scale(float* data, int64_t count, float s) override;

 protected:
  void* buffer(Buffer which, size_t bytes) override;
  void add(float* dst, const float* src, int64_t n, float scale) override;
  void add_wire(float* dst, const uint16_t* src, int64_t n, Wire wire) override;
  void narrow(const float* src, uint16_t* dst, int64_t n, Wire wire) override;
  void widen(const uint16_t* src, float* dst, int64_t n, Wire wire) override;

 private:
  cudaStream_t s_;
  DeviceBuffer buffers_[3];
};

}  // namespace rt
