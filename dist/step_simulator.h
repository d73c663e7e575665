// A model of one data-parallel training step at any number of ranks, for `ringtrain simulate`:
// compute from a per-parameter profile of when backward finishes each gradient, communication
// from the real bucket plan (bucket_plan.h, the trainer's own) launched in the trainer's order
// (Note [Bucket order]: in arena order, one bucket at a time), each bucket costing what the ring
// schedule (ring_schedule.h) costs on the cluster's links.
//
// Note [Ring cost]: an allreduce of B bytes over p ranks is 2(p - 1) steps; in each, every rank
// sends B / p bytes to its successor while receiving as much from its predecessor. Ranks are
// placed host by host, so the ring crosses each host boundary once and every step is as slow as
// its slowest link: the inter-host link when there is more than one host, else the intra-host
// one. Time = 2(p - 1) (latency + B / (p bandwidth)).
//
// Note [Two-level cost]: the two-level ring (Note [Two-level ring]) over H hosts of L ranks is
// 2(L - 1) steps inside the hosts, each rank sending B / L over the intra-host link, then 2(H - 1)
// steps across them, in which a host's L ranks each send B / (L H) at once through the host's
// inter-host bandwidth (all its NICs, as the flat ring's one crossing gets them all). Time =
// 2(L - 1) (latency_intra + B / (L bw_intra)) + 2(H - 1) (latency_inter + B / (H bw_inter)): the
// same bytes across hosts as the flat ring, in 2(H - 1) latency steps instead of 2(HL - 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dist/bucket_plan.h"
#include "dist/host_layout.h"

namespace rt {

struct LinkModel {
  double bytes_per_s = 1e9;
  double latency_s = 0;
};

struct ClusterModel {
  int ranks_per_host = 1;
  LinkModel intra_host, inter_host;
  // Horovod's fusion of its day ran in cycles: a collective could start only at a cycle boundary.
  // 0: none (ringtrain launches a bucket as soon as it is ready).
  double cycle_s = 0;
  // How much slower backward runs while a collective is in flight: 0.3 = 30% slower. On CPU hosts
  // the ring's copies, its sums and the kernel's network stack share the cores and memory with
  // backward (tour chapter 4); a GPU's copy engines and NIC leave it near 0.
  double overlap_slowdown = 0;
};

// Note [Ring cost], for one allreduce.
double ring_allreduce_seconds(double bytes, int ranks, const ClusterModel& cluster);
// Note [Two-level cost], for one allreduce over hosts of cluster.ranks_per_host ranks, of a buffer
// of `bytes` in float32 that crosses hosts as bytes_across (half of it on a 16-bit wire).
double two_level_allreduce_seconds(double bytes, double bytes_across, int ranks, const ClusterModel& cluster);
// The hierarchy dist.hierarchy = `setting` resolves to at `ranks` ranks placed host by host.
Hierarchy simulated_hierarchy(Hierarchy setting, int ranks, const ClusterModel& cluster);

// When backward finishes each gradient, in arena order (the order they become final).
struct ComputeProfile {
  double forward_s = 0;         // forward and loss, before backward starts
  double backward_s = 0;        // the whole backward pass
  std::vector<double> ready_s;  // per parameter: from backward's start
  double optimizer_s = 0;       // after the last allreduce
};

struct StepPrediction {
  int ranks = 1;
  double step_s = 0;          // forward, backward, the communication left after it, the optimizer
  double compute_s = 0;       // forward, backward and optimizer alone (the one-rank step)
  double comm_busy_s = 0;     // the sum of the buckets' allreduce times
  double exposed_comm_s = 0;  // step_s - compute_s: communication backward did not hide
  double efficiency = 1;      // compute_s / step_s: per-rank throughput against one rank alone
};

// Note [Compression cost]: a bucket PowerSGD compresses (Note [PowerSGD buckets] in
// dist/powersgd_buckets.h) keeps the communication thread busy for two allreduces, of its other
// tensors with every P and then of every Q, and for the products around them (P = M Q before the
// first, Q = M^T P between, P Q^T and the error after). The products are passes over each
// compressed n x m gradient, priced per element at a rate measured on the rank's device
// (bench/powersgd_products): products_s. A bucket averaged plainly is one allreduce of its floats.
struct BucketRounds {
  int64_t first_floats = 0;   // the bucket's one allreduce, or the first of two
  int64_t second_floats = 0;  // 0: none
  double products_s = 0;
};

// buckets over params (arena order, as plan_buckets made them); bytes_per_element: 4 in float32,
// 2 with a 16-bit wire. overlap = false: every bucket waits for backward's end. rounds: one per
// bucket where some are compressed (Note [Compression cost]); empty: every bucket plain.
StepPrediction simulate_step(const ComputeProfile& profile, const std::vector<ParamExtent>& params,
                             const std::vector<Bucket>& buckets, int ranks, bool overlap, const ClusterModel& cluster,
                             double bytes_per_element = 4, Hierarchy hierarchy = Hierarchy::kFlat,
                             const std::vector<BucketRounds>& rounds = {});

// The step of train.accumulate_steps = K micro-batches (Note [Gradient accumulation]) from the
// prediction for one: the K - 1 before the last compute with no collective, so the step grows by
// (K - 1) micro-batches' forward and backward, and the communication left exposed stays that of
// one step.
StepPrediction with_accumulation(const StepPrediction& one, const ComputeProfile& profile, int64_t micro_batches);
// One rank's compute `factor` times as long (a straggler, Note [Naming the straggler] in
// app/run/straggler_report.h): every bucket's ring waits for its gradients and the step for its
// optimizer, so the job steps at this profile's pace.
ComputeProfile slowed(const ComputeProfile& profile, double factor);

// Note [Group batch norm cost]: train.bn_group = G stops the compute thread at every batch-norm
// layer of every micro-batch for three averages over G ranks of one host (the mean and the
// variance forward, C floats each; backward's two sums, 2C), each a ring allreduce (Note [Ring
// cost]) over the intra-host link: at these sizes 2(G - 1) latencies each. The time adds to the
// step and counts as exposed communication: a rank alone has none of it.
// group <= cluster.ranks_per_host (statistics_group_refusal in dist/statistics_group.h says where
// a layout does not divide into groups).
double bn_group_seconds(const std::vector<int64_t>& bn_channels, int group, const ClusterModel& cluster);
StepPrediction with_bn_group(const StepPrediction& step, double seconds_per_micro_batch, int64_t micro_batches);

}  // namespace rt
