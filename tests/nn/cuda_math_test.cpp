// The CUDA kernels' per-element math (nn/ops/elementwise_math.h) and the convolution algorithm
// rule, checked on the CPU against the CPU backend and closed forms. These run everywhere, GPU or
// not: they are what keeps the GPU's arithmetic honest on machines that cannot run it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/rng.h"
#include "nn/device.h"
#include "nn/plan_context.h"
#include "nn/ops/cuda/algorithm_choice.h"
#include "nn/ops/cuda/channel_tiles.h"
#include "nn/ops/cuda/packed_map.h"
#include "nn/ops/dropout.h"
#include "nn/ops/elementwise_math.h"
#include "nn/ops/pool2d.h"
#include "nn/ops/relu.h"
#include "nn/ops/reorder.h"
#include "nn/ops/sgd_update.h"
#include "nn/ops/softmax_cross_entropy.h"

namespace rt::testing {
namespace {

Tensor random_plain(const Shape& shape, uint64_t seed, float scale = 1.0f) {
  Tensor t(plain_spec(shape));
  Rng rng(seed, 7);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(rng.normal()) * scale;
  return t;
}

TEST(CudaMath, ReluMatchesCpuOpForwardAndBackward) {
  Tensor x = random_plain({2, 3, 5, 5}, 1);
  x.data()[0] = 0.0f;  // the boundary: both treat 0 as inactive
  Tensor dy = random_plain({2, 3, 5, 5}, 2);
  auto op = make_relu(x.spec());
  Tensor y(x.spec()), dx(x.spec());
  op->forward(x, y);
  op->backward(y, dy, dx);
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(relu_forward(x.data()[i]), y.data()[i]) << "element " << i;
    ASSERT_EQ(relu_backward(y.data()[i], dy.data()[i]), dx.data()[i]) << "element " << i;
  }
}

TEST(CudaMath, SgdElementMatchesCpuUpdateAndTorchRule) {
  for (bool nesterov : {false, true}) {
    SCOPED_TRACE(nesterov ? "nesterov" : "plain momentum");
    const SgdStep s{0.1f, 0.9f, 1e-4f, nesterov};
    const int64_t n = 1000;
    Tensor w = random_plain({n}, 3), g = random_plain({n}, 4), v = random_plain({n}, 5);
    std::vector<float> w2(w.data(), w.data() + n), v2(v.data(), v.data() + n);
    sgd_update(Device::kCpu, s, w.data(), g.data(), v.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      // torch.optim.SGD in double: d = g + wd w; buf = m buf + d; w -= lr (nesterov ? d + m buf : buf).
      const double d = double{g.data()[i]} + 1e-4 * w2[i], buf = 0.9 * v2[i] + d;
      const double expected = w2[i] - 0.1 * (nesterov ? d + 0.9 * buf : buf);
      sgd_element(s, w2[i], g.data()[i], v2[i]);
      ASSERT_FLOAT_EQ(w2[i], w.data()[i]) << "element " << i;
      ASSERT_FLOAT_EQ(v2[i], v.data()[i]) << "element " << i;
      ASSERT_NEAR(w2[i], expected, 1e-6 * (1 + std::fabs(expected))) << "element " << i;
    }
  }
}

// fp16's loss scaling: gradients arrive multiplied by the scale and the step divides it out, so
// a step on 1024 g with grad_scale 1/1024 is the step on g (both exact in binary).
TEST(CudaMath, SgdGradScaleDividesTheLossScaleOut) {
  const int64_t n = 1000;
  const Tensor w0 = random_plain({n}, 6), g = random_plain({n}, 7), v0 = random_plain({n}, 8);
  std::vector<float> scaled(g.data(), g.data() + n);
  for (float& x : scaled) x *= 1024.0f;
  std::vector<float> w1(w0.data(), w0.data() + n), v1(v0.data(), v0.data() + n), w2 = w1, v2 = v1;
  SgdStep s{0.1f, 0.9f, 1e-4f, true};
  sgd_update(Device::kCpu, s, w1.data(), g.data(), v1.data(), n);
  s.grad_scale = 1.0f / 1024;
  sgd_update(Device::kCpu, s, w2.data(), scaled.data(), v2.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(w1[i], w2[i]) << "element " << i;
    ASSERT_EQ(v1[i], v2[i]) << "element " << i;
  }
}

TEST(CudaMath, DropoutScaleIsTheCpuMaskWithTheRightStatistics) {
  const float p = 0.3f;
  const int64_t n = 200000;
  Tensor x(plain_spec({n})), y(plain_spec({n}));
  for (int64_t i = 0; i < n; ++i) x.data()[i] = 1.0f;
  auto op = make_dropout(p, x.spec());
  op->set_step(42, 7);
  op->forward(x, y, true);
  int64_t dropped = 0, differs_next_step = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float s = dropout_scale(42, 7, static_cast<uint64_t>(i), p);
    ASSERT_EQ(s, y.data()[i]) << "element " << i;
    ASSERT_TRUE(s == 0.0f || s == 1.0f / (1.0f - p)) << "element " << i << " scale " << s;
    dropped += s == 0.0f;
    differs_next_step += s != dropout_scale(42, 8, static_cast<uint64_t>(i), p);
  }
  // Binomial(n, p): standard deviation sqrt(n p (1 - p)) ~ 205; allow 5 of them.
  EXPECT_NEAR(static_cast<double>(dropped), p * n, 5 * std::sqrt(n * p * (1 - p)));
  // Independent masks differ where exactly one drops: 2 p (1 - p) of the elements.
  EXPECT_NEAR(static_cast<double>(differs_next_step), 2 * p * (1 - p) * n, 5 * std::sqrt(n * 0.5));
}

TEST(CudaMath, SoftmaxCrossEntropyRowMatchesCpuOp) {
  const int64_t N = 6, K = 11;
  Tensor z = random_plain({N, K}, 9, 3.0f), dz(plain_spec({N, K}));
  std::vector<int32_t> t{0, 3, 10, 5, 5, 1};
  z.data()[3 * K + 5] = z.data()[3 * K + 2];  // a tie with the target: not "above" it
  for (double smoothing : {0.0, 0.1}) {
    const LossResult cpu = softmax_cross_entropy(z, t.data(), smoothing, &dz, 0.5);
    double total = 0;
    int64_t top1 = 0, top5 = 0;
    std::vector<float> row_dz(K);
    for (int64_t n = 0; n < N; ++n) {
      double loss;
      int64_t above;
      softmax_cross_entropy_row(z.data() + n * K, K, t[n], smoothing, 0.5 / N, row_dz.data(), &loss, &above);
      total += loss;
      top1 += above == 0;
      top5 += above < 5;
      for (int64_t k = 0; k < K; ++k) ASSERT_FLOAT_EQ(row_dz[k], dz.data()[n * K + k]) << "row " << n << " k " << k;
    }
    EXPECT_DOUBLE_EQ(total / N, cpu.loss);
    EXPECT_EQ(top1, cpu.correct1);
    EXPECT_EQ(top5, cpu.correct5);
  }
  // NaN logits rank the target last, as the CPU op does.
  std::vector<float> nans(K, std::nanf(""));
  {
    double nan_loss;
    int64_t nan_above;
    softmax_cross_entropy_row(nans.data(), K, 3, 0.0, 0.5, nullptr, &nan_loss, &nan_above);
    EXPECT_EQ(nan_above, kUnranked);
  }
  // Closed form: equal logits give log K whatever the target.
  std::vector<float> flat(K, 2.5f);
  double loss;
  int64_t above;
  softmax_cross_entropy_row(flat.data(), K, 4, 0.0, 1.0, nullptr, &loss, &above);
  EXPECT_NEAR(loss, std::log(static_cast<double>(K)), 1e-12);
  EXPECT_EQ(above, 0);
}

// Pooling as the CUDA kernels compute it (same windows, same max rule), on the host.
Tensor pool_with_axes(const Tensor& x, const PoolAxis& ah, const PoolAxis& aw, bool max, bool include_pad) {
  const int64_t planes = x.dim(0) * x.dim(1);
  Tensor y(plain_spec({x.dim(0), x.dim(1), ah.out, aw.out}));
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < ah.out; ++i)
      for (int64_t j = 0; j < aw.out; ++j) {
        float best = -INFINITY, sum = 0;
        int64_t inside = 0;
        for (int64_t h = std::max<int64_t>(ah.begin(i), 0); h < std::min(ah.end(i), ah.in); ++h)
          for (int64_t w = std::max<int64_t>(aw.begin(j), 0); w < std::min(aw.end(j), aw.in); ++w) {
            const float v = x.data()[(p * ah.in + h) * aw.in + w];
            best = std::max(best, v);
            sum += v;
            ++inside;
          }
        const int64_t count = include_pad ? (ah.end(i) - ah.begin(i)) * (aw.end(j) - aw.begin(j)) : inside;
        y.data()[(p * ah.out + i) * aw.out + j] = max ? best : sum / static_cast<float>(count);
      }
  return y;
}

TEST(CudaMath, PoolWindowsMatchCpuPooling) {
  const Tensor x = random_plain({2, 3, 9, 8}, 11);
  struct Case {
    PoolKind kind;
    int64_t k, s, p;
    bool include_pad;
  };
  for (const Case c :
       {Case{PoolKind::kMax, 3, 2, 1, true}, Case{PoolKind::kMax, 3, 2, 0, true}, Case{PoolKind::kAvg, 3, 1, 1, true},
        Case{PoolKind::kAvg, 3, 1, 1, false}, Case{PoolKind::kAvg, 2, 2, 0, true}}) {
    Pool2dGeometry g;
    g.kind = c.kind;
    g.kernel_h = g.kernel_w = c.k;
    g.stride_h = g.stride_w = c.s;
    g.pad_h = g.pad_w = c.p;
    g.count_include_pad = c.include_pad;
    auto op = make_pool2d(g, x.spec());
    Tensor y(op->y_spec());
    op->forward(x, y, true);
    const Shape ys = g.output_shape(x.shape());
    const Tensor mine = pool_with_axes(x, {9, ys[2], c.k, c.s, c.p}, {8, ys[3], c.k, c.s, c.p},
                                       c.kind == PoolKind::kMax, c.include_pad);
    const Tensor cpu = to_plain(y);
    for (int64_t i = 0; i < cpu.numel(); ++i)
      ASSERT_NEAR(mine.data()[i], cpu.data()[i], 1e-6) << "k" << c.k << " s" << c.s << " p" << c.p << " at " << i;
  }
  for (const auto& [oh, ow] : {std::pair<int64_t, int64_t>{4, 3}, {1, 1}, {9, 8}, {5, 7}}) {
    auto op = make_adaptive_avg_pool2d(oh, ow, x.spec());
    Tensor y(op->y_spec());
    op->forward(x, y, true);
    const Tensor mine = pool_with_axes(x, {9, oh, 0, 1, 0}, {8, ow, 0, 1, 0}, false, true);
    const Tensor cpu = to_plain(y);
    for (int64_t i = 0; i < cpu.numel(); ++i) ASSERT_NEAR(mine.data()[i], cpu.data()[i], 1e-6) << oh << "x" << ow;
  }
}

// The backward kernel visits outputs first_output(h)..last_output(h) and keeps those that
// contain h: that range must hold every window containing h, for every geometry.
TEST(CudaMath, PoolAxisOutputRangesCoverEveryWindow) {
  std::vector<PoolAxis> axes;
  for (int64_t in : {1, 2, 5, 7, 8, 17, 35})
    for (int64_t k = 1; k <= 7; ++k)
      for (int64_t s = 1; s <= 3; ++s)
        for (int64_t p = 0; 2 * p <= k; ++p)
          if (in + 2 * p >= k) axes.push_back({in, (in + 2 * p - k) / s + 1, k, s, p});
  for (int64_t in : {1, 5, 7, 8, 17})
    for (int64_t out = 1; out <= 9; ++out) axes.push_back({in, out, 0, 1, 0});
  for (const PoolAxis& a : axes)
    for (int64_t h = 0; h < a.in; ++h)
      for (int64_t i = 0; i < a.out; ++i) {
        if (!a.contains(i, h)) continue;
        ASSERT_TRUE(i >= a.first_output(h) && i <= a.last_output(h))
            << "in " << a.in << " out " << a.out << " k " << a.kernel << " s " << a.stride << " p " << a.pad << ": row "
            << h << " is in window " << i << " outside [" << a.first_output(h) << ", " << a.last_output(h) << "]";
      }
  // Disjoint axes (max pooling's backward scatters there): no row lies in two windows; and the
  // rule is not vacuous: 2x2/2 is disjoint, 3x3/2 and adaptive axes are not.
  for (const PoolAxis& a : axes) {
    if (!a.disjoint()) continue;
    for (int64_t h = 0; h < a.in; ++h) {
      int64_t windows = 0;
      for (int64_t i = 0; i < a.out; ++i) windows += a.contains(i, h);
      ASSERT_LE(windows, 1) << "in " << a.in << " k " << a.kernel << " s " << a.stride << " p " << a.pad << ": row "
                            << h;
    }
  }
  EXPECT_TRUE((PoolAxis{8, 4, 2, 2, 0}.disjoint()));
  EXPECT_FALSE((PoolAxis{8, 4, 3, 2, 1}.disjoint()));
  EXPECT_FALSE((PoolAxis{8, 3, 0, 1, 0}.disjoint()));
  // The GPU's 32-bit copy of each axis answers as the 64-bit one.
  for (const PoolAxis& a : axes) {
    const BasicPoolAxis<int32_t> b = a.as<int32_t>();
    for (int32_t h = 0; h < b.in; ++h)
      ASSERT_TRUE(b.first_output(h) == a.first_output(h) && b.last_output(h) == a.last_output(h)) << "row " << h;
    for (int32_t i = 0; i < b.out; ++i) ASSERT_TRUE(b.begin(i) == a.begin(i) && b.end(i) == a.end(i)) << "window " << i;
  }
}

TEST(CudaMath, AlgorithmChoiceIsTheFastestAllowedWithinTheWorkspace) {
  using cuda::AlgorithmTrial;
  const std::vector<AlgorithmTrial> trials{{0, true, 3.0f, 0, false, 0},   {1, true, 2.0f, 64, false, 0},
                                           {6, true, 0.5f, 32, true, 0},   {2, false, 0.1f, 0, false, 0},
                                           {5, true, 1.0f, 4096, true, 0}, {3, true, 1.5f, 1024, false, 0}};
  EXPECT_EQ(cuda::choose_algorithm(trials, 1 << 20, true)->algorithm, 6);   // transforms allowed: Winograd
  EXPECT_EQ(cuda::choose_algorithm(trials, 1 << 20, false)->algorithm, 3);  // direct only; 2 failed
  EXPECT_EQ(cuda::choose_algorithm(trials, 100, false)->algorithm, 1);      // 3 needs too much workspace
  EXPECT_EQ(cuda::choose_algorithm(trials, 0, false)->algorithm, 0);
  EXPECT_FALSE(cuda::choose_algorithm({{2, false, 0.1f, 0, false, 0}}, 1 << 20, true).has_value());

  cuda::AlgorithmCache cache;
  EXPECT_EQ(cache.find("fwd (1, 3, 8, 8)"), nullptr);
  cache.insert("fwd (1, 3, 8, 8)", trials[1]);
  ASSERT_NE(cache.find("fwd (1, 3, 8, 8)"), nullptr);
  EXPECT_EQ(cache.find("fwd (1, 3, 8, 8)")->algorithm, 1);
  EXPECT_EQ(cache.find("bwd_data (1, 3, 8, 8)"), nullptr);
}

// The packed walk of the elementwise kernels, played thread by thread for a few grid sizes: every
// element is written once, with the op of its own inputs and index, at both pack widths, with
// tails of every length, in place too.
template <typename T, int P>
void expect_packed_map_covers(int64_t n, int64_t threads) {
  SCOPED_TRACE(str_cat("n ", n, " threads ", threads, " pack ", P, " of ", sizeof(T), "-byte elements"));
  struct Tagged {  // exact in bf16 for these small integers
    float operator()(float a, float b, int64_t i) const { return a + 2 * b + static_cast<float>(i); }
  };
  struct Negated {
    float operator()(float a, int64_t) const { return -a; }
  };
  // new[] aligns to 16 bytes, as the packs need; past n, y keeps a sentinel.
  std::vector<T> a(static_cast<size_t>(n) + P), b(a.size()), y(a.size());
  for (int64_t i = 0; i < n; ++i)
    cuda::store(&a[static_cast<size_t>(i)], static_cast<float>(i % 7)),
        cuda::store(&b[static_cast<size_t>(i)], static_cast<float>(i % 5));
  const float sentinel = 1000;
  for (T& v : y) cuda::store(&v, sentinel);
  for (int64_t t = 0; t < threads; ++t) cuda::map_share<P>(Tagged{}, a.data(), b.data(), y.data(), n, t, threads);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(cuda::load(&y[static_cast<size_t>(i)]), static_cast<float>(i % 7 + 2 * (i % 5) + i)) << "element " << i;
  EXPECT_EQ(cuda::load(&y[static_cast<size_t>(n)]), sentinel) << "written past the end";
  for (int64_t t = 0; t < threads; ++t)
    cuda::map_share<P>(Negated{}, y.data(), static_cast<const T*>(nullptr), y.data(), n, t, threads);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(cuda::load(&y[static_cast<size_t>(i)]), -static_cast<float>(i % 7 + 2 * (i % 5) + i))
        << "in place, " << i;
}

TEST(CudaMath, PackedMapsWriteEveryElementOnceAtEveryWidth) {
  for (int64_t n : {0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100})
    for (int64_t threads : {1, 3, 8, 32}) {
      expect_packed_map_covers<cuda::Bf16, 8>(n, threads);
      expect_packed_map_covers<cuda::Bf16, 1>(n, threads);
      expect_packed_map_covers<float, 4>(n, threads);
      expect_packed_map_covers<cuda::F16, 8>(n, threads);
    }
  // The width: 16 bytes' worth where every pointer is 16-byte aligned, else one element.
  alignas(16) cuda::Bf16 buffer[16];
  int width = 0;
  cuda::with_pack_width<cuda::Bf16>({buffer, nullptr}, [&](auto w) { width = decltype(w)::value; });
  EXPECT_EQ(width, 8);
  cuda::with_pack_width<cuda::Bf16>({buffer, buffer + 1}, [&](auto w) { width = decltype(w)::value; });
  EXPECT_EQ(width, 1);
  cuda::with_pack_width<float>({buffer}, [&](auto w) { width = decltype(w)::value; });
  EXPECT_EQ(width, 4);
}

// The convolution's 16-bit bias kernels (channel_tiles.h), played thread by thread on the host:
// the bias add reaches every element once with its channel's bias, and the two-pass sum (each
// slice's block into partials, then the partials) is each channel's sum. Integer-valued data make
// every float32 sum exact, so a row counted twice or missed shows as a wrong integer.
std::vector<float> play_channel_sums(const cuda::ChannelTiles& t, const std::vector<cuda::Bf16>& x) {
  std::vector<float> partials(static_cast<size_t>(t.slices * t.C)), sums(static_cast<size_t>(t.C));
  for (int64_t tile = 0; tile < t.tiles(); ++tile)
    for (int64_t lane = 0; lane < cuda::ChannelTiles::kLanes; ++lane) {
      const int64_t c = t.channel(tile, lane);
      if (c >= t.C) continue;
      for (int64_t slice = 0; slice < t.slices; ++slice)
        partials[static_cast<size_t>(slice * t.C + c)] = cuda::slice_sum(t, x.data(), c, slice);
    }
  const cuda::ChannelTiles second = t.of_partials();
  for (int64_t c = 0; c < t.C; ++c)
    sums[static_cast<size_t>(c)] =
        t.slices == 1 ? partials[static_cast<size_t>(c)] : cuda::slice_sum(second, partials.data(), c, 0);
  return sums;
}

TEST(CudaMath, ChannelTilesAddAndSumEveryElementOfItsChannelOnce) {
  struct Case {
    int64_t rows, C;
  };
  // One row; a channel tile cut short (C = 3, 40); many slices with rows not a multiple of the
  // stride (5000 rows over 20 slices of 8 row threads, 31 or 32 rows each, tails of the four
  // partial sums included); C = 64 at VGG-16's first layers' proportions.
  for (const Case k : {Case{1, 1}, Case{7, 3}, Case{100, 32}, Case{5000, 40}, Case{12345, 3}, Case{40000, 64}}) {
    SCOPED_TRACE(str_cat(k.rows, " rows x ", k.C, " channels"));
    const cuda::ChannelTiles t = cuda::ChannelTiles::of(k.rows, k.C);
    EXPECT_GE(t.slices, 1);
    EXPECT_LE(t.slices * t.tiles(), cuda::ChannelTiles::kTargetBlocks + t.tiles());
    if (k.rows >= 5000) {
      EXPECT_GT(t.slices, 1) << "a tall tensor spreads over several slices";
    }
    const size_t n = static_cast<size_t>(k.rows * k.C);
    std::vector<cuda::Bf16> x(n), y(n);
    std::vector<int64_t> expected(static_cast<size_t>(k.C), 0);
    for (int64_t r = 0; r < k.rows; ++r)
      for (int64_t c = 0; c < k.C; ++c) {
        const int64_t v = (r * 7 + c * 3) % 11 - 5;  // exact in bf16
        cuda::store(&x[static_cast<size_t>(r * k.C + c)], static_cast<float>(v));
        cuda::store(&y[static_cast<size_t>(r * k.C + c)], static_cast<float>(r % 4));
        expected[static_cast<size_t>(c)] += v;
      }
    const std::vector<float> sums = play_channel_sums(t, x);
    for (int64_t c = 0; c < k.C; ++c)
      ASSERT_EQ(sums[static_cast<size_t>(c)], static_cast<float>(expected[static_cast<size_t>(c)])) << "channel " << c;

    // The bias: channel c adds c + 1, so an element reached twice, or not at all, is off.
    std::vector<float> b(static_cast<size_t>(k.C));
    for (int64_t c = 0; c < k.C; ++c) b[static_cast<size_t>(c)] = static_cast<float>(c + 1);
    for (int64_t tile = 0; tile < t.tiles(); ++tile)
      for (int64_t slice = 0; slice < t.slices; ++slice)
        for (int64_t lane = 0; lane < cuda::ChannelTiles::kLanes; ++lane)
          for (int64_t row_thread = 0; row_thread < cuda::ChannelTiles::kRowThreads; ++row_thread) {
            const int64_t c = t.channel(tile, lane);
            cuda::add_to_column(t, c < k.C ? b[static_cast<size_t>(c)] : 0.0f, y.data(), c, slice, row_thread);
          }
    for (int64_t r = 0; r < k.rows; ++r)
      for (int64_t c = 0; c < k.C; ++c)
        ASSERT_EQ(cuda::load(&y[static_cast<size_t>(r * k.C + c)]), static_cast<float>(r % 4 + c + 1))
            << "row " << r << ", channel " << c;
  }
}

// On real-valued data the tiled sum is as close to the exact one as float32 summation allows.
TEST(CudaMath, ChannelTilesSumRandomValuesToFloatPrecision) {
  const int64_t rows = 64 * 56 * 56, C = 8;
  const cuda::ChannelTiles t = cuda::ChannelTiles::of(rows, C);
  std::vector<cuda::Bf16> x(static_cast<size_t>(rows * C));
  std::vector<double> exact(C, 0.0), magnitude(C, 0.0);
  Rng rng(11, 3);
  for (int64_t i = 0; i < rows * C; ++i) {
    cuda::store(&x[static_cast<size_t>(i)], static_cast<float>(rng.normal()) + 0.5f);
    const double v = cuda::load(&x[static_cast<size_t>(i)]);
    exact[static_cast<size_t>(i % C)] += v;
    magnitude[static_cast<size_t>(i % C)] += std::fabs(v);
  }
  const std::vector<float> sums = play_channel_sums(t, x);
  for (int64_t c = 0; c < C; ++c) {
    // The worst-case error of a float32 summation whose longest chain of additions is `terms`
    // long is terms x u x sum|x|, u = 2^-24: a thread's four partial sums, their two combining
    // additions, the block's 8 row threads, then the slices' partials.
    const double terms = static_cast<double>(rows) / static_cast<double>(t.row_stride()) / 4 + 2 + 8 + t.slices;
    EXPECT_NEAR(sums[static_cast<size_t>(c)], exact[static_cast<size_t>(c)],
                terms * 0x1p-24 * magnitude[static_cast<size_t>(c)])
        << "channel " << c;
  }
}

TEST(CudaMath, GraphEnginesKeepThePrecisionsPromise) {
  using cuda::EngineNotes;
  using cuda::EngineRules;
  EngineNotes plain;
  plain.known = true;
  EngineNotes tensor_cores = plain, down_converts = plain, short_sums = plain, winograd = plain;
  tensor_cores.tensor_cores = true;
  down_converts.down_converts_inputs = true;
  short_sums.reduced_precision_sums = true;
  winograd.transform = true;
  const EngineRules fp32{true, false, false}, tf32{true, true, false}, bf16{false, false, false},
      bf16_winograd{false, false, true};
  // Float32 products: tensor cores (TF32) only where TF32 is allowed.
  EXPECT_TRUE(cuda::engine_allowed(plain, fp32));
  EXPECT_FALSE(cuda::engine_allowed(tensor_cores, fp32));
  EXPECT_TRUE(cuda::engine_allowed(tensor_cores, tf32));
  EXPECT_TRUE(cuda::engine_allowed(tensor_cores, bf16));  // 16-bit data: tensor cores are the point
  // Float32 sums and unconverted inputs at every precision.
  for (const EngineRules& r : {fp32, tf32, bf16, bf16_winograd}) {
    EXPECT_FALSE(cuda::engine_allowed(down_converts, r));
    EXPECT_FALSE(cuda::engine_allowed(short_sums, r));
    EXPECT_FALSE(cuda::engine_allowed(EngineNotes{}, r)) << "notes cuDNN did not report";
  }
  // Transforms only under conv_algorithm "winograd".
  EXPECT_FALSE(cuda::engine_allowed(winograd, bf16));
  EXPECT_TRUE(cuda::engine_allowed(winograd, bf16_winograd));
}

}  // namespace
}  // namespace rt::testing
