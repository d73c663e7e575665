// The simulator's cluster files (configs/clusters/), loaded as strictly as the run configuration:
// by a key schema (config/schema.h), so an unknown key, a wrong type or a value out of range is an
// rt::Error naming the file, the line and the key. The file's format:
//   ranks_per_host = 4
//   bandwidth_efficiency = 1.0          # optional: the share of each link's bandwidth a ring step gets
//   overlap_slowdown = 0.0              # optional: see ClusterModel::overlap_slowdown
//   [intra_host]  gbit_per_s = 100, latency_us = 5
//   [inter_host]  gbit_per_s = 25,  latency_us = 10
//   [compute]     batch_per_rank = 64, estimate = false,
//                 images_per_s = { resnet101 = 119.4, vgg16 = 130.9, inception_v3 = 134.4 },
//                 powersgd_ns_per_element = 1.4, powersgd_ns_per_rank = 0.2  # optional (bench/powersgd_products)
#pragma once

#include <cstdint>
#include <string>

#include "config/schema.h"
#include "dist/step_simulator.h"

namespace rt {

// The file as written.
struct ClusterSpec {
  struct Link {
    double gbit_per_s = 0;
    double latency_us = 0;
  };
  struct Compute {
    int64_t batch_per_rank = 64;
    bool estimate = false;
    NumberTable images_per_s;  // one rank alone, per model
    // PowerSGD's products per element of a compressed tensor at rank 1, and what each rank more
    // adds (Note [Compression cost]); 0: not priced.
    double powersgd_ns_per_element = 0;
    double powersgd_ns_per_rank = 0;
    bool powersgd_estimate = false;
  };
  int64_t ranks_per_host = 1;
  double bandwidth_efficiency = 1;
  double overlap_slowdown = 0;
  Link intra_host, inter_host;
  Compute compute;
};

const SchemaOf<ClusterSpec>& cluster_schema();

// What the simulator works from.
struct ClusterFile {
  ClusterModel cluster;  // links already scaled by bandwidth_efficiency
  int64_t batch_per_rank = 64;
  double images_per_s = 0;  // one rank alone, for the config's model
  bool estimate = false;    // the figure is an estimate, not a measurement: the report says so
  double bandwidth_efficiency = 1;
  // PowerSGD's products, in seconds per element of a compressed tensor and per rank more; 0: the
  // file does not price them.
  double powersgd_s_per_element = 0, powersgd_s_per_rank = 0;
  bool powersgd_estimate = false;
  bool prices_powersgd() const { return powersgd_s_per_element > 0; }
};

// rt::Error naming the file, the key and what was expected. need_compute = false: the [compute]
// table may be absent (a measured profile gives the compute).
ClusterFile load_cluster_file(const std::string& path, const std::string& model_name, bool need_compute = true);

}  // namespace rt
