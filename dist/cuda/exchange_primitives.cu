#include "dist/cuda/exchange_primitives.cuh"

namespace rt {
namespace {

// The ring's per-element work, the same RT_HD conversions as the CPU ring's (wire_format.h).
__global__ void scale_kernel(float* x, int64_t n, float s) { RT_FOR_EACH_ELEMENT(i, n) x[i] *= s; }
__global__ void add_kernel(float* dst, const float* src, int64_t n, float scale) {
  RT_FOR_EACH_ELEMENT(i, n) dst[i] = (dst[i] + src[i]) * scale;
}
__global__ void add_wire_kernel(float* dst, const uint16_t* src, int64_t n, Wire wire) {
  RT_FOR_EACH_ELEMENT(i, n) dst[i] += from_wire(src[i], wire);
}
__global__ void narrow_kernel(const float* src, uint16_t* dst, int64_t n, Wire wire) {
  RT_FOR_EACH_ELEMENT(i, n) dst[i] = to_wire(src[i], wire);
}
__global__ void widen_kernel(const uint16_t* src, float* dst, int64_t n, Wire wire) {
  RT_FOR_EACH_ELEMENT(i, n) dst[i] = from_wire(src[i], wire);
}

unsigned grid(int64_t n) { return cuda::blocks_for(n); }

}  // namespace

void GpuExchangePrimitives::scale(float* data, int64_t count, float s) {
  if (s == 1.0f || count == 0) return;
  scale_kernel<<<grid(count), 256, 0, s_>>>(data, count, s);
  RT_CU_LAUNCHED();
}

void* GpuExchangePrimitives::buffer(Buffer which, size_t bytes) {
  buffers_[which].grow_to(bytes);
  return buffers_[which].ptr;
}

void GpuExchangePrimitives::add(float* dst, const float* src, int64_t n, float scale) {
  if (n == 0) return;
  add_kernel<<<grid(n), 256, 0, s_>>>(dst, src, n, scale);
  RT_CU_LAUNCHED();
}
void GpuExchangePrimitives::add_wire(float* dst, const uint16_t* src, int64_t n, Wire wire) {
  if (n == 0) return;
  add_wire_kernel<<<grid(n), 256, 0, s_>>>(dst, src, n, wire);
  RT_CU_LAUNCHED();
}
void GpuExchangePrimitives::narrow(const float* src, uint16_t* dst, int64_t n, Wire wire) {
  if (n == 0) return;
  narrow_kernel<<<grid(n), 256, 0, s_>>>(src, dst, n, wire);
  RT_CU_LAUNCHED();
}
void GpuExchangePrimitives::widen(const uint16_t* src, float* dst, int64_t n, Wire wire) {
  if (n == 0) return;
  widen_kernel<<<grid(n), 256, 0, s_>>>(src, dst, n, wire);
  RT_CU_LAUNCHED();
}

}  // namespace rt
