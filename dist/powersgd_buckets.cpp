// Note [PowerSGD buckets] in powersgd_buckets.h.
#include "dist/powersgd_buckets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/check.h"
#include "base/rng.h"
#include "base/test_fault.h"
#include "dist/world.h"

namespace rt {
namespace {

// The first Q's stream: apart from the parameters' (name hashes), the shuffles' and the transforms'.
constexpr uint64_t kFirstQStream = 0x7053'6764'0000'0000ull;

}  // namespace

std::vector<PowerSgdRounds> powersgd_rounds(const std::vector<ParamExtent>& params,
                                            const std::vector<std::vector<int64_t>>& shapes,
                                            const std::vector<Bucket>& buckets, const PowerSgdOptions& options) {
  std::vector<PowerSgdRounds> rounds;
  for (const Bucket& b : buckets) {
    PowerSgdRounds r;
    for (size_t i = b.first_param; i < b.end_param; ++i) {
      const int64_t k = powersgd_rank(shapes.at(i), options.rank, options.min_ratio);
      if (k == 0) {
        r.first_floats += params[i].count;
        continue;
      }
      const int64_t n = shapes[i][0], m = params[i].count / n;
      r.first_floats += k * n;
      r.second_floats += k * m;
      r.elements += n * m;
      r.element_ranks += n * m * k;
    }
    // A bucket without a compressed tensor is averaged as it lies, padding included.
    if (r.elements == 0) r.first_floats = b.count;
    rounds.push_back(r);
  }
  return rounds;
}

PowerSgdFloats powersgd_floats(const std::vector<ParamExtent>& params, const std::vector<std::vector<int64_t>>& shapes,
                               const std::vector<Bucket>& buckets, const PowerSgdOptions& options) {
  PowerSgdFloats floats;
  const std::vector<PowerSgdRounds> rounds = powersgd_rounds(params, shapes, buckets, options);
  for (size_t b = 0; b < buckets.size(); ++b) {
    floats.plain += buckets[b].count;
    floats.compressed += rounds[b].first_floats + rounds[b].second_floats;
  }
  return floats;
}

PowerSgdBuckets::PowerSgdBuckets(const std::vector<ParamExtent>& params,
                                 const std::vector<std::vector<int64_t>>& shapes, const std::vector<Bucket>& buckets,
                                 const PowerSgdOptions& options)
    : start_step_(options.start_step), rank_(options.rank), floats_(powersgd_floats(params, shapes, buckets, options)) {
  RT_CHECK(shapes.size() == params.size(), "PowerSGD: ", shapes.size(), " shapes for ", params.size(), " parameters");
  plans_.resize(buckets.size());
  for (size_t b = 0; b < buckets.size(); ++b) {
    Plan& plan = plans_[b];
    for (size_t i = buckets[b].first_param; i < buckets[b].end_param; ++i) {
      const int64_t k = powersgd_rank(shapes[i], options.rank, options.min_ratio);
      if (k == 0) {
        plan.plain.push_back(params[i]);
        plan.plain_count += params[i].count;
        continue;
      }
      Tensor t;
      t.param = i;
      t.offset = params[i].offset;
      t.matrix = {shapes[i][0], params[i].count / shapes[i][0], k};
      RT_CHECK(t.matrix.n * t.matrix.m == params[i].count, "PowerSGD: parameter ", i, " has ", params[i].count,
               " floats, not its shape's ", t.matrix.n * t.matrix.m);
      t.error.assign(static_cast<size_t>(params[i].count), 0.0f);
      Rng rng(options.seed, kFirstQStream + tensors_.size());
      t.q.resize(static_cast<size_t>(t.matrix.m * k));
      for (float& x : t.q) x = rng.uniform() - 0.5f;
      plan.p_count += t.matrix.n * k;
      plan.q_count += t.matrix.m * k;
      plan.tensors.push_back(tensors_.size());
      tensors_.push_back(std::move(t));
    }
    if (plan.tensors.empty()) continue;  // averaged in place, plainly
    first_round_floats_ = std::max(first_round_floats_, plan.plain_count + plan.p_count);
    second_round_floats_ = std::max(second_round_floats_, plan.q_count);
  }
}

bool PowerSgdBuckets::compresses(size_t bucket, int64_t step) const {
  return step >= start_step_ && !plans_.at(bucket).tensors.empty();
}

void PowerSgdBuckets::average(float* arena, size_t bucket, Collective& collective, const WaitContext& context,
                              Timeline* timeline) {
  Plan& plan = plans_.at(bucket);
  double phase_start = timeline ? timeline->now_us() : 0;
  const auto phase_done = [&](const char* name, const char* category) {
    if (!timeline) return;
    const double now = timeline->now_us();
    timeline->span(name, category, phase_start, now, 1, static_cast<int64_t>(bucket));
    phase_start = now;
  };
  float* const first = first_round();
  float* const ps = first + plan.plain_count;
  float* const qs = second_round();
  // Round 1: the uncompressed tensors as they are, and P = M Q of each compressed one.
  int64_t at = 0;
  for (const ParamExtent& e : plan.plain) {
    copy(first + at, arena + e.offset, e.count);
    at += e.count;
  }
  int64_t p_at = 0;
  for (size_t i : plan.tensors) {
    compress(i, arena + tensors_[i].offset, ps + p_at);
    p_at += tensors_[i].matrix.n * tensors_[i].matrix.k;
  }
  phase_done("P = M Q", "powersgd");
  collective.average(first, plan.plain_count + plan.p_count, context);
  phase_done("average P", "ring");
  at = 0;
  for (const ParamExtent& e : plan.plain) {
    copy(arena + e.offset, first + at, e.count);
    at += e.count;
  }
  // Round 2: each averaged P orthonormalized, this rank's Q = M^T P.
  p_at = 0;
  int64_t q_at = 0;
  for (size_t i : plan.tensors) {
    const PowerSgdMatrix& x = tensors_[i].matrix;
    project(i, ps + p_at, qs + q_at);
    p_at += x.n * x.k;
    q_at += x.m * x.k;
  }
  phase_done("Q = M^T P", "powersgd");
  inject_fault("powersgd_rounds", World::get().rank(), context.step);  // between the two averages
  collective.average(qs, plan.q_count, context);
  phase_done("average Q", "ring");
  // The gradient every rank applies, P Q^T; this rank's error; Q carried to the next step.
  p_at = q_at = 0;
  plan.error_squares = plan.m_squares = 0;
  for (size_t i : plan.tensors) {
    const PowerSgdMatrix& x = tensors_[i].matrix;
    decompress(i, bucket, ps + p_at, qs + q_at, arena + tensors_[i].offset);
    carry_q(i, qs + q_at);
    p_at += x.n * x.k;
    q_at += x.m * x.k;
  }
  phase_done("P Q^T", "powersgd");
}

float* PowerSgdBuckets::first_round() {
  if (first_round_.empty()) first_round_.resize(static_cast<size_t>(first_round_floats_));
  return first_round_.data();
}

float* PowerSgdBuckets::second_round() {
  if (second_round_.empty()) second_round_.resize(static_cast<size_t>(second_round_floats_));
  return second_round_.data();
}

void PowerSgdBuckets::copy(float* to, const float* from, int64_t floats) { std::copy(from, from + floats, to); }

void PowerSgdBuckets::compress(size_t tensor, const float* grad, float* p) {
  Tensor& t = tensors_[tensor];
  t.matrix.compress(grad, t.error.data(), t.q.data(), p);
}

void PowerSgdBuckets::project(size_t tensor, float* p, float* q_local) {
  tensors_[tensor].matrix.project(tensors_[tensor].error.data(), p, q_local);
}

void PowerSgdBuckets::decompress(size_t tensor, size_t bucket, const float* p, const float* q, float* grad) {
  Tensor& t = tensors_[tensor];
  const auto [error_squares, m_squares] = t.matrix.decompress(p, q, grad, t.error.data());
  plans_[bucket].error_squares += error_squares;
  plans_[bucket].m_squares += m_squares;
}

void PowerSgdBuckets::carry_q(size_t tensor, const float* q) {
  std::copy(q, q + tensors_[tensor].q.size(), tensors_[tensor].q.begin());
}

double PowerSgdBuckets::error_relative_norm() const {
  double error_squares = 0, m_squares = 0;
  for (const Plan& plan : plans_) {
    error_squares += plan.error_squares;
    m_squares += plan.m_squares;
  }
  return m_squares > 0 ? std::sqrt(error_squares / m_squares) : 0;
}

PhaseSwitch PowerSgdBuckets::average_bucket(float* arena, size_t index, const Bucket& bucket, int64_t step,
                                            Collective& collective, const WaitContext& context, Timeline* timeline) {
  if (!compresses(index, step)) return collective.average(arena + bucket.offset, bucket.count, context);
  average(arena, index, collective, context, timeline);
  return std::nullopt;
}

std::string PowerSgdBuckets::describe(size_t tensors) const {
  char fewer[32];
  std::snprintf(fewer, sizeof fewer, "%.1f",
                static_cast<double>(floats_.plain) / static_cast<double>(std::max<int64_t>(floats_.compressed, 1)));
  return str_cat("PowerSGD (dist.compression) at rank ", rank_, " on ", tensors_.size(), " of ", tensors,
                 " tensors from step ", start_step_ + 1, ": ", floats_.compressed, " floats a step instead of ",
                 floats_.plain, " (", fewer, "x fewer); every rank applies the whole update");
}

}  // namespace rt
