#include "tests/nn/gradcheck.h"

#include <cmath>
#include <sstream>

#include "base/rng.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/reorder.h"

namespace rt::testing {

Tensor tensor_from_plain(const TensorSpec& spec, const std::vector<float>& values) {
  Tensor plain(plain_spec(spec.shape));
  std::copy(values.begin(), values.end(), plain.data());
  if (spec.is_plain()) return plain;
  Tensor t(spec);
  reorder(plain, t);
  return t;
}

namespace {

std::vector<float> plain_values(const Tensor& t) {
  Tensor p = to_plain(t);
  return std::vector<float>(p.data(), p.data() + p.numel());
}

// Evenly spread probe positions over n elements.
std::vector<int64_t> probes(int64_t n, int max_probes) {
  std::vector<int64_t> out;
  if (n <= max_probes) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
  } else {
    for (int k = 0; k < max_probes; ++k)
      out.push_back((k * n) / max_probes + (k * 7919) % std::max<int64_t>(1, n / max_probes));
  }
  return out;
}

}  // namespace

TensorSpec blocked_spec(const Shape& shape) {
  auto op = make_conv2d(Conv2dGeometry::square(shape[1], shape[1], 1), plain_spec(shape), false);
  return op->y_spec();
}

GradcheckReport gradcheck(Layer& layer, const std::vector<TensorSpec>& x_specs, const GradcheckOptions& o) {
  Rng rng(1234, 1);
  // Parameters, their gradients, buffers.
  std::vector<Tensor> params, grads, buffers;
  for (const ParamSpec& p : layer.param_specs()) {
    params.emplace_back(plain_spec(p.shape));
    grads.emplace_back(plain_spec(p.shape));
    for (int64_t i = 0; i < params.back().numel(); ++i) params.back().data()[i] = 2 * rng.uniform() - 1;
  }
  for (const BufferSpec& b : layer.buffer_specs()) {
    buffers.emplace_back(plain_spec(b.shape));
    std::fill(buffers.back().data(), buffers.back().data() + buffers.back().numel(), b.fill);
  }
  layer.bind(params, grads, buffers);
  const TensorSpec y_spec = layer.plan(x_specs, std::vector<bool>(x_specs.size(), true));

  std::vector<std::vector<float>> x_values(x_specs.size());
  std::vector<Tensor> xs;
  for (size_t i = 0; i < x_specs.size(); ++i) {
    for (int64_t k = 0; k < numel(x_specs[i].shape); ++k) {
      const float u = 2 * rng.uniform() - 1;
      x_values[i].push_back(o.input_value ? o.input_value(i, k, u) : u);
    }
    xs.push_back(tensor_from_plain(x_specs[i], x_values[i]));
  }
  std::vector<float> r(static_cast<size_t>(numel(y_spec.shape)));
  for (float& v : r) v = 2 * rng.uniform() - 1;

  const RunContext ctx{o.training, 7, 3};
  Tensor y(y_spec);
  auto loss = [&]() {
    std::vector<const Tensor*> xp;
    for (Tensor& x : xs) xp.push_back(&x);
    layer.forward(xp, y, ctx);
    const std::vector<float> yv = plain_values(y);
    double l = 0;
    for (size_t k = 0; k < yv.size(); ++k) l += static_cast<double>(r[k]) * yv[k];
    return l;
  };

  loss();
  std::vector<Tensor> dxs;
  std::vector<Tensor*> dxp;
  std::vector<const Tensor*> xp;
  for (size_t i = 0; i < xs.size(); ++i) {
    dxs.emplace_back(x_specs[i]);
    xp.push_back(&xs[i]);
  }
  for (Tensor& d : dxs) dxp.push_back(&d);
  const Tensor dy = tensor_from_plain(y_spec, r);
  layer.backward(xp, y, dy, dxp, ctx);

  GradcheckReport rep;
  auto compare = [&](double analytic, double numeric, const std::string& where) {
    const double err = std::abs(analytic - numeric);
    const double rel = err / std::max(std::abs(numeric), 1e-12);
    if (err > rep.max_abs_err) {
      rep.max_abs_err = err;
      rep.worst = where;
    }
    if (std::abs(numeric) > 1e-3) rep.max_rel_err = std::max(rep.max_rel_err, rel);
    if (err > o.abs_tol + o.rel_tol * std::abs(numeric)) {
      if (rep.failures++ == 0) {
        std::ostringstream os;
        os << where << ": analytic " << analytic << " vs numeric " << numeric;
        rep.first_failure = os.str();
      }
    }
  };

  for (size_t i = 0; i < xs.size(); ++i) {
    const std::vector<float> dx = plain_values(dxs[i]);
    for (int64_t k : probes(static_cast<int64_t>(x_values[i].size()), o.max_probes)) {
      const float saved = x_values[i][k];
      x_values[i][k] = saved + static_cast<float>(o.step);
      xs[i] = tensor_from_plain(x_specs[i], x_values[i]);
      const double lp = loss();
      x_values[i][k] = saved - static_cast<float>(o.step);
      xs[i] = tensor_from_plain(x_specs[i], x_values[i]);
      const double lm = loss();
      x_values[i][k] = saved;
      xs[i] = tensor_from_plain(x_specs[i], x_values[i]);
      compare(dx[k], (lp - lm) / (2 * o.step), "dx" + std::to_string(i) + "[" + std::to_string(k) + "]");
    }
  }
  const auto specs = layer.param_specs();
  const std::vector<std::vector<float>> g0 = [&] {
    std::vector<std::vector<float>> g;
    for (Tensor& t : grads) g.emplace_back(t.data(), t.data() + t.numel());
    return g;
  }();
  for (size_t p = 0; p < params.size(); ++p) {
    for (int64_t k : probes(params[p].numel(), o.max_probes)) {
      float& w = params[p].data()[k];
      const float saved = w;
      w = saved + static_cast<float>(o.step);
      const double lp = loss();
      w = saved - static_cast<float>(o.step);
      const double lm = loss();
      w = saved;
      compare(g0[p][k], (lp - lm) / (2 * o.step), "d" + specs[p].name + "[" + std::to_string(k) + "]");
    }
  }
  return rep;
}

}  // namespace rt::testing
