// `ringtrain simulate --config X.toml --ranks 8,16,...,512 --network CLUSTER.toml [--cycle-ms C]`: the predicted
// step time and scaling efficiency of X's model and [dist] settings on a described cluster, from
// dist/step_simulator.h with the trainer's own bucket plan (app/gradient_buckets.h).
//
// The cluster file: tools/cluster_file.h (configs/clusters/ has the Horovod paper's, a modern one
// and this machine's). Compute: one rank's step is batch / images_per_s; a third of it is forward, two thirds backward
// (training costs about three times the forward multiply-adds), and backward's time is spread over
// the layers, last to first, in proportion to their multiply-adds. A gradient is ready when its
// layer's share is done.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/compute_profile.h"
#include "app/gradient_buckets.h"
#include "config/config.h"
#include "dist/step_simulator.h"
#include "formats/step_profile.h"
#include "nn/graph.h"
#include "tools/cluster_file.h"

namespace rt {

// The config's model planned at batch 1 on the CPU, and its gradient buckets under the config's
// [dist]: what simulate_report works from.
struct SimulatedModel {
  std::unique_ptr<Graph> graph;
  GradientBuckets gradients;
};
SimulatedModel plan_model_for_simulation(const Config& config);

// "8,16,32" -> {8, 16, 32}; rt::Error for anything but positive integers.
std::vector<int> parse_rank_list(const std::string& text);

// The report: a header of '#' lines, then one whitespace-separated row per rank count (gnuplot
// reads it as it is).
// cycle_s > 0 models Horovod's cycles (a collective starts only on a cycle boundary).
// profile_path: a `bench --profile` file to take the compute from, instead of the cluster file's
// images/s spread by multiply-adds.
// straggler > 0: one rank's compute that much slower (0.1: 10%); two more columns give the step
// with it and the efficiency against the one-rank step without it.
std::string simulate_report(const Config& config, const std::vector<int>& ranks, const std::string& network_path,
                            double cycle_s = 0, const std::string& profile_path = "", double straggler = 0);
// `simulate --suggest`: for each rank count, the dist.hierarchy, dist.bucket_mb and
// dist.first_bucket_mb the simulator predicts fastest, and dist.compression with its rank where
// the cluster file prices PowerSGD's products and compression pays, their step and efficiency
// beside the config's own, and the gain; the last line says how to set them for the last rank count.
std::string suggest_report(const Config& config, const std::vector<int>& ranks, const std::string& network_path,
                           double cycle_s = 0, const std::string& profile_path = "");

// `simulate --autotune`: for each rank count, the bucket caps dist.autotune would measure (the
// config's and the best the simulator ranks, app/run/bucket_tuner.h) with their predicted steps, and
// the one it would settle on if the steps went as predicted.
std::string autotune_report(const Config& config, const std::vector<int>& ranks, const std::string& network_path,
                            double cycle_s = 0, const std::string& profile_path = "");

}  // namespace rt
