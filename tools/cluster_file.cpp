#include "tools/cluster_file.h"

#include <toml++/toml.h>

#include "base/check.h"
#include "config/schema_loader.h"

namespace rt {
namespace {

using S = ClusterSpec;

}  // namespace

const SchemaOf<ClusterSpec>& cluster_schema() {
  static const SchemaOf<ClusterSpec> schema = {
      {.table = "",
       .key = "ranks_per_host",
       .field = &member<&S::ranks_per_host>,
       .doc = "ranks on each host, joined by the intra-host link",
       .bound = at_least(1),
       .required = true},
      {.table = "",
       .key = "bandwidth_efficiency",
       .field = &member<&S::bandwidth_efficiency>,
       .doc = "the share of each link's bandwidth a ring step gets",
       .bound = {.lo = 0, .hi = 1, .lo_open = true}},
      {.table = "",
       .key = "overlap_slowdown",
       .field = &member<&S::overlap_slowdown>,
       .doc = "how much slower backward runs while a collective is in flight (0.3 = 30%)",
       .bound = at_least(0)},
      {.table = "intra_host",
       .key = "gbit_per_s",
       .field = &member<&S::intra_host, &S::Link::gbit_per_s>,
       .doc = "bandwidth between ranks of one host",
       .bound = above(0),
       .required = true},
      {.table = "intra_host",
       .key = "latency_us",
       .field = &member<&S::intra_host, &S::Link::latency_us>,
       .doc = "one ring step's latency between ranks of one host",
       .bound = at_least(0),
       .required = true},
      {.table = "inter_host",
       .key = "gbit_per_s",
       .field = &member<&S::inter_host, &S::Link::gbit_per_s>,
       .doc = "bandwidth between hosts",
       .bound = above(0),
       .required = true},
      {.table = "inter_host",
       .key = "latency_us",
       .field = &member<&S::inter_host, &S::Link::latency_us>,
       .doc = "one ring step's latency between hosts",
       .bound = at_least(0),
       .required = true},
      {.table = "compute",
       .key = "batch_per_rank",
       .field = &member<&S::compute, &S::Compute::batch_per_rank>,
       .doc = "images per rank per step",
       .bound = at_least(1)},
      {.table = "compute",
       .key = "estimate",
       .field = &member<&S::compute, &S::Compute::estimate>,
       .doc = "the figures are estimates, not measurements: the report says so"},
      {.table = "compute",
       .key = "images_per_s",
       .field = &member<&S::compute, &S::Compute::images_per_s>,
       .doc = "one rank's training images/s, per model",
       .bound = above(0)},
      {.table = "compute",
       .key = "powersgd_ns_per_element",
       .field = &member<&S::compute, &S::Compute::powersgd_ns_per_element>,
       .doc = "PowerSGD's products at rank 1, per element of a compressed gradient (bench/powersgd_products)",
       .bound = at_least(0)},
      {.table = "compute",
       .key = "powersgd_ns_per_rank",
       .field = &member<&S::compute, &S::Compute::powersgd_ns_per_rank>,
       .doc = "what each rank of PowerSGD beyond the first adds per element",
       .bound = at_least(0)},
      {.table = "compute",
       .key = "powersgd_estimate",
       .field = &member<&S::compute, &S::Compute::powersgd_estimate>,
       .doc = "the PowerSGD figures are estimates, not measurements: the report says so"},
  };
  return schema;
}

ClusterFile load_cluster_file(const std::string& path, const std::string& model_name, bool need_compute) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    RT_CHECK(false, "cannot read cluster file '", path, "': ", e.description(), " at line ", e.source().begin.line);
  }
  SchemaLoader<ClusterSpec> loader(path, cluster_schema());
  loader.apply_document(root);
  loader.validate();
  const ClusterSpec& spec = loader.value();
  if (need_compute) {
    // Only here: a measured profile (simulate --profile) needs no figure from the file.
    loader.require("compute", "batch_per_rank");
    loader.require("compute", "images_per_s");
    const NumberTable& figures = spec.compute.images_per_s;
    if (loader.has_value("compute", "images_per_s") && !figures.contains(model_name)) {
      std::string known;
      for (const auto& [name, _] : figures) known += (known.empty() ? "" : ", ") + name;
      if (known.empty()) known = "none";
      loader.fail(loader.origin_of("compute", "images_per_s"),
                  str_cat("compute.images_per_s has no figure for ", model_name, " (it has ", known, ")"));
    }
  }
  const ClusterSpec s = loader.finish();
  ClusterFile f;
  f.cluster.ranks_per_host = static_cast<int>(s.ranks_per_host);
  f.cluster.overlap_slowdown = s.overlap_slowdown;
  f.bandwidth_efficiency = s.bandwidth_efficiency;
  for (auto [from, to] : {std::pair{&s.intra_host, &f.cluster.intra_host}, {&s.inter_host, &f.cluster.inter_host}}) {
    to->bytes_per_s = from->gbit_per_s * 1e9 / 8 * s.bandwidth_efficiency;
    to->latency_s = from->latency_us / 1e6;
  }
  f.estimate = s.compute.estimate;
  f.powersgd_s_per_element = s.compute.powersgd_ns_per_element / 1e9;
  f.powersgd_s_per_rank = s.compute.powersgd_ns_per_rank / 1e9;
  f.powersgd_estimate = s.compute.powersgd_estimate;
  if (!need_compute) return f;
  f.batch_per_rank = s.compute.batch_per_rank;
  f.images_per_s = s.compute.images_per_s.at(model_name);
  return f;
}

}  // namespace rt
