// Note [cuBLAS at first use] in nn/cuda/cublas_library.h: a process that trains on the CPU never
// maps cuBLAS (about 210 MiB resident), and in a CUDA build the first call to cuda::cublas() does.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "nn/ops/conv2d.h"
#include "nn/ops/reorder.h"
#ifdef RINGTRAIN_WITH_CUDA
#include "nn/cuda/cublas_library.h"
#endif

namespace rt {
namespace {

bool maps_cublas() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream all;
  all << maps.rdbuf();
  return all.str().find("libcublas") != std::string::npos;
}

TEST(CublasAtFirstUse, ACpuConvolutionLeavesItUnmappedAndTheFirstCallMapsIt) {
  const Conv2dGeometry g = Conv2dGeometry::square(4, 8, 3, 1, 1);
  const auto op = make_conv2d(g, plain_spec({1, 4, 6, 6}), false);
  Tensor x(plain_spec({1, 4, 6, 6})), w(plain_spec(g.weight_shape())), y(op->y_spec());
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = 0.25f * static_cast<float>(i % 7);
  for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = 0.5f;
  op->forward(x, w, nullptr, y);
  EXPECT_FALSE(maps_cublas()) << "a CPU convolution's process has cuBLAS mapped: something links it again";
#ifdef RINGTRAIN_WITH_CUDA
  int major = 0;
  ASSERT_EQ(cuda::cublas().get_property(MAJOR_VERSION, &major), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(major, CUBLAS_VER_MAJOR);  // the cuBLAS of the headers ringtrain was built with
  EXPECT_TRUE(maps_cublas()) << "cuda::cublas() answered without mapping cuBLAS";
#endif
}

}  // namespace
}  // namespace rt
