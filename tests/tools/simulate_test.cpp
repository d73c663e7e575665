// `ringtrain simulate`: the ring's cost against its closed form, overlap against the plain sum,
// the compute profile's bookkeeping, the cluster file's checks, and the model against the Horovod
// paper: two constants (the share of each link's bandwidth a ring step gets, and the inter-host
// latency per ring step) fitted on VGG-16, then all three models within 5 points of the paper's
// efficiencies at 16, 128 and 512 GPUs; configs/clusters/horovod_paper.toml must hold the fit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <string>
#include <vector>

#include "tools/simulate.h"
#include "base/check.h"

namespace rt {
namespace {

const std::string kPaperCluster = std::string(RT_SOURCE_DIR) + "/configs/clusters/horovod_paper.toml";

ClusterModel two_links(int per_host) {
  ClusterModel c;
  c.ranks_per_host = per_host;
  c.intra_host = {10e9, 2e-6};
  c.inter_host = {3e9, 15e-6};
  return c;
}

TEST(Simulate, OneBucketCostsTheRingsClosedForm) {
  const std::vector<ParamExtent> params = {{0, 1000003}};
  const std::vector<Bucket> buckets = plan_buckets(params, 1 << 30, 1 << 30);
  ASSERT_EQ(buckets.size(), 1u);
  const ComputeProfile nothing{0, 0, {0}};
  const double bytes = 1000003 * 4.0;
  for (int p : {2, 3, 8, 512})
    for (int per_host : {1, 4, 1024}) {
      const ClusterModel c = two_links(per_host);
      const LinkModel& link = p > per_host ? c.inter_host : c.intra_host;
      const double want = 2.0 * (p - 1) * (link.latency_s + bytes / p / link.bytes_per_s);
      const StepPrediction s = simulate_step(nothing, params, buckets, p, true, c);
      EXPECT_NEAR(s.step_s, want, 1e-12 * want) << p << " ranks, " << per_host << " per host";
      EXPECT_NEAR(ring_allreduce_seconds(bytes, p, c), want, 1e-12 * want);
    }
  EXPECT_EQ(ring_allreduce_seconds(bytes, 1, two_links(1)), 0.0);
}

// Three parameters finished at 10, 20 and 30 ms of a 30 ms backward, one bucket each. Overlapped,
// each bucket starts when it is ready or the previous one is done; not overlapped, all start at
// the end. A 16-bit wire halves the bytes.
TEST(Simulate, BucketsStartWhenReadyAndOneAtATime) {
  const std::vector<ParamExtent> params = {{0, 1000}, {1000, 1000}, {2000, 1000}};
  const std::vector<Bucket> buckets = plan_buckets(params, 0, 0);
  ASSERT_EQ(buckets.size(), 3u);
  const ComputeProfile profile{0.005, 0.030, {0.010, 0.020, 0.030}};
  ClusterModel c = two_links(1);
  c.inter_host = {4000 / 0.006, 0};  // at 2 ranks a ring is 2 steps of half the bucket: 6 ms
  const double t = ring_allreduce_seconds(4000, 2, c);
  ASSERT_NEAR(t, 0.006, 1e-12);
  // Ready at 10, 20, 30: 10-16, 20-26, 30-36.
  EXPECT_NEAR(simulate_step(profile, params, buckets, 2, true, c).step_s, 0.005 + 0.036, 1e-12);
  // Not overlapped: 30-36, 36-42, 42-48.
  EXPECT_NEAR(simulate_step(profile, params, buckets, 2, false, c).step_s, 0.005 + 0.048, 1e-12);
  // A 5 ms cycle: starts move to 10, 20, 30 (already on the boundaries) and nothing changes...
  c.cycle_s = 0.005;
  EXPECT_NEAR(simulate_step(profile, params, buckets, 2, true, c).step_s, 0.005 + 0.036, 1e-12);
  // ...but with 4 ms cycles: 12-18, 20-26, 32-38.
  c.cycle_s = 0.004;
  EXPECT_NEAR(simulate_step(profile, params, buckets, 2, true, c).step_s, 0.005 + 0.038, 1e-12);
  // Backward at half speed while a ring runs: ready at 10; then 23 (3 ms of work during 10-16);
  // then 36 (3 more during 23-29), which is also backward's end; the last ring ends at 42.
  c.cycle_s = 0;
  c.overlap_slowdown = 1.0;
  EXPECT_NEAR(simulate_step(profile, params, buckets, 2, true, c).step_s, 0.005 + 0.042, 1e-12);
  c.overlap_slowdown = 0;
  const StepPrediction half = simulate_step(profile, params, buckets, 2, false, c, 2);
  EXPECT_NEAR(half.step_s, 0.005 + 0.030 + 3 * 0.003, 1e-12);
  EXPECT_NEAR(half.efficiency, 0.035 / half.step_s, 1e-12);
}

// A straggler 20% slower (Note [Naming the straggler]): its gradients are ready at 12, 24 and 36 ms,
// its forward takes 6; each bucket's ring starts when it is ready: 12-18, 24-30, 36-42, so the step
// is 6 + 42 ms. The others' compute alone (5 + 30) gives the efficiency.
TEST(Simulate, AStragglerSetsThePaceOfEveryBucket) {
  const ComputeProfile profile{0.005, 0.030, {0.010, 0.020, 0.030}};
  const std::vector<ParamExtent> params = {{0, 1000}, {1000, 1000}, {2000, 1000}};
  const std::vector<Bucket> buckets = plan_buckets(params, 0, 0);
  ClusterModel c = two_links(1);
  c.inter_host = {4000 / 0.006, 0};
  const ComputeProfile slow = slowed(profile, 1.2);
  EXPECT_NEAR(slow.forward_s, 0.006, 1e-12);
  EXPECT_NEAR(slow.ready_s[2], 0.036, 1e-12);
  const StepPrediction even = simulate_step(profile, params, buckets, 2, true, c);
  const StepPrediction with = simulate_step(slow, params, buckets, 2, true, c);
  EXPECT_NEAR(with.step_s, 0.006 + 0.042, 1e-12);
  EXPECT_GT(with.step_s, even.step_s);
  EXPECT_NEAR(even.compute_s / with.step_s, 0.035 / 0.048, 1e-12);
}

// train.accumulate_steps = K: the K - 1 micro-batches before the last add their forward and
// backward (5 + 30 ms each) and no communication, so the exposed communication is paid once per
// K micro-batches and the efficiency rises; K = 1 changes nothing.
TEST(Simulate, AccumulationAddsComputeButNotCommunication) {
  ComputeProfile profile;
  profile.forward_s = 0.005;
  profile.backward_s = 0.030;
  StepPrediction one;
  one.step_s = 0.048;
  one.compute_s = 0.035;
  one.exposed_comm_s = 0.013;
  one.efficiency = one.compute_s / one.step_s;
  const StepPrediction same = with_accumulation(one, profile, 1);
  EXPECT_EQ(same.step_s, one.step_s);
  EXPECT_EQ(same.efficiency, one.efficiency);
  const StepPrediction four = with_accumulation(one, profile, 4);
  EXPECT_NEAR(four.step_s, 0.048 + 3 * 0.035, 1e-12);
  EXPECT_NEAR(four.compute_s, 4 * 0.035, 1e-12);
  EXPECT_NEAR(four.exposed_comm_s, 0.013, 1e-12);
  EXPECT_NEAR(four.efficiency, 0.140 / 0.153, 1e-12);
}

// Note [Group batch norm cost] in closed form: per layer of C channels, two rings of 4C bytes
// and one of 8C over G ranks of one host, each 2(G - 1) (latency + bytes / (G bandwidth)).
TEST(Simulate, GroupBatchNormCostsThreeSmallRingsPerLayerInsideAHost) {
  ClusterModel c;
  c.ranks_per_host = 8;  // the group's rings stay inside a host
  c.intra_host = {1e9, 5e-6};
  c.inter_host = {1e8, 50e-6};
  const auto ring = [](double bytes, int g) { return 2.0 * (g - 1) * (5e-6 + bytes / (g * 1e9)); };
  const double layers = 2 * ring(4 * 64, 4) + ring(8 * 64, 4) + 2 * ring(4 * 256, 4) + ring(8 * 256, 4);
  EXPECT_NEAR(bn_group_seconds({64, 256}, 4, c), layers, 1e-15);
  EXPECT_EQ(bn_group_seconds({64, 256}, 1, c), 0);
  StepPrediction one;
  one.step_s = 0.050;
  one.compute_s = 0.040;
  one.exposed_comm_s = 0.010;
  const StepPrediction grouped = with_bn_group(one, 0.002, 3);  // three micro-batches a step
  EXPECT_NEAR(grouped.step_s, 0.056, 1e-12);
  EXPECT_NEAR(grouped.exposed_comm_s, 0.016, 1e-12);
  EXPECT_NEAR(grouped.efficiency, 0.040 / 0.056, 1e-12);
}

TEST(Simulate, ProfileSpreadsBackwardOverTheLayersLastToFirst) {
  Config config;
  config.model.name = "lenet";
  const SimulatedModel m = plan_model_for_simulation(config);
  const ComputeProfile p = profile_from_multiply_adds(*m.graph, 0.3);
  EXPECT_NEAR(p.forward_s, 0.1, 1e-12);
  EXPECT_NEAR(p.backward_s, 0.2, 1e-12);
  ASSERT_EQ(p.ready_s.size(), m.graph->params().size());
  // Arena order is the order backward finishes gradients: the ready times never go back, and the
  // first layer's gradients are the last, at backward's end.
  for (size_t i = 1; i < p.ready_s.size(); ++i) EXPECT_LE(p.ready_s[i - 1], p.ready_s[i]) << i;
  EXPECT_NEAR(p.ready_s.back(), 0.2, 1e-9);
}

TEST(Simulate, ClusterFileErrorsNameTheFileAndKey) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "rt_bad_cluster.toml";
  // `words` must be in the message; `not_said` (where given) must not.
  auto expect_error = [&](const std::string& text, const std::string& words, const std::string& not_said = "") {
    std::ofstream(path) << text;
    try {
      load_cluster_file(path.string(), "resnet101");
      ADD_FAILURE() << "accepted:\n" << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
      if (!not_said.empty()) {
        EXPECT_EQ(std::string(e.what()).find(not_said), std::string::npos) << e.what();
      }
    }
  };
  expect_error("ranks_per_host = 4\ncycle_ms = 5\n", ":2: unknown key 'cycle_ms'");
  const std::string links =
      "[intra_host]\ngbit_per_s = 100\nlatency_us = 1\n[inter_host]\ngbit_per_s = 25\nlatency_us = 5\n";
  const std::string compute = "[compute]\nbatch_per_rank = 64\nimages_per_s = { vgg16 = 130.9 }\n";
  expect_error(links + compute, "missing key 'ranks_per_host'");
  expect_error("ranks_per_host = 4\n" + links + compute,
               ":10: compute.images_per_s has no figure for resnet101 (it has vgg16)");
  expect_error("ranks_per_host = 4\nbandwith = 3\n" + links + compute,
               ":2: unknown key 'bandwith' (keys outside the tables are: ranks_per_host, bandwidth_efficiency");
  expect_error("ranks_per_host = 0\n" + links + compute, ":1: 'ranks_per_host' = 0 is out of range: expected >= 1");
  expect_error("ranks_per_host = 4\n[intra_host]\ngbit_per_s = \"fast\"\nlatency_us = 1\n",
               ":3: 'intra_host.gbit_per_s' expects a number, got a string", "missing key 'intra_host.gbit_per_s'");
  expect_error("ranks_per_host = 4\n[inter_hots]\ngbit_per_s = 25\n",
               ":2: unknown table 'inter_hots' (did you mean 'intra_host' or 'inter_host'?)");
  expect_error("ranks_per_host = 4\n" + links + "[compute]\nbatch_per_rank = 64\nimages_per_s = { resnet101 = -1 }\n",
               ":10: 'compute.images_per_s.resnet101' = -1.0 is out of range: expected > 0");
  expect_error("ranks_per_host = 4\n" + links + "[compute]\nimages_per_s = { resnet101 = 100 }\n",
               "missing key 'compute.batch_per_rank'");
  expect_error("ranks_per_host = 4\n" + links + "[compute]\nbatch_per_rank = 64\nimages_per_s = 100\n",
               ":10: 'compute.images_per_s' expects a table of numbers, got an integer", "missing key");
  expect_error("ranks_per_host = 4\n" + links + "[compute]\nbatch_per_rank = 64\nimages_per_s = {}\n",
               ":10: compute.images_per_s has no figure for resnet101 (it has none)");
  std::filesystem::remove(path);
  EXPECT_THROW(parse_rank_list("8,sixteen"), Error);
  EXPECT_EQ(parse_rank_list("8,16,512"), (std::vector<int>{8, 16, 512}));
}

// A measured profile: each gradient is ready when its layer's measured backward is done, counted
// from the last layer; forward and optimizer frame the step; a profile of another model or with
// other layers is refused.
TEST(Simulate, MeasuredProfileTimesEachGradientByItsLayer) {
  Config config;
  config.model.name = "lenet";
  const SimulatedModel m = plan_model_for_simulation(config);
  const std::vector<LayerRow> rows = m.graph->layer_table();
  StepProfile measured{"lenet", 8, 0.010, 0.002, {}};
  for (size_t i = 0; i < rows.size(); ++i)
    measured.layers.emplace_back(rows[i].name, 0.001 * static_cast<double>(i + 1));
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "rt_profile_test.txt";
  write_step_profile(path.string(), measured, "test");
  const StepProfile back = read_step_profile(path.string());
  EXPECT_EQ(back.layers, measured.layers);
  EXPECT_EQ(back.batch_per_rank, 8);
  const ComputeProfile p = profile_from_measurement(*m.graph, back, path.string());
  const double n = static_cast<double>(rows.size());
  EXPECT_NEAR(p.backward_s, 0.001 * n * (n + 1) / 2, 1e-12);
  EXPECT_NEAR(back.step_s(), 0.012 + p.backward_s, 1e-12);
  // The last layer (the classifier) is done first, after its own 1 ms x n.
  EXPECT_NEAR(p.ready_s.front(), 0.001 * n, 1e-12);
  EXPECT_NEAR(p.ready_s.back(), p.backward_s, 1e-12);
  const StepPrediction alone = simulate_step(p, m.gradients.params, m.gradients.buckets, 1, true, two_links(1));
  EXPECT_NEAR(alone.step_s, back.step_s(), 1e-12);
  StepProfile renamed = measured;
  renamed.layers[1].first = "conv9";
  try {
    profile_from_measurement(*m.graph, renamed, "p.txt");
    ADD_FAILURE() << "a profile with another layer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 1 is conv9, the model's is " + rows[1].name), std::string::npos)
        << e.what();
  }
  std::ofstream(path) << "model lenet\nbatch_per_rank 8\nlayer conv1 fast\n";
  EXPECT_THROW(read_step_profile(path.string()), Error);
  std::filesystem::remove(path);
}

// Note [Two-level cost] against its closed form, through simulate_step as through the function;
// its degenerate layouts cost what the flat ring does.
TEST(Simulate, TwoLevelRingCostsItsClosedForm) {
  const std::vector<ParamExtent> params = {{0, 1000003}};
  const std::vector<Bucket> buckets = plan_buckets(params, 1 << 30, 1 << 30);
  const ComputeProfile nothing{0, 0, {0}};
  const double bytes = 1000003 * 4.0;
  const ClusterModel c = two_links(8);
  for (int p : {16, 64, 512}) {
    const int hosts = p / 8;
    const double inside = 2.0 * 7 * (2e-6 + bytes / 8 / 10e9);
    const double want = inside + 2.0 * (hosts - 1) * (15e-6 + bytes / hosts / 3e9);
    EXPECT_NEAR(two_level_allreduce_seconds(bytes, bytes, p, c), want, 1e-12 * want) << p;
    const StepPrediction s = simulate_step(nothing, params, buckets, p, true, c, 4, Hierarchy::kTwoLevel);
    EXPECT_NEAR(s.step_s, want, 1e-12 * want) << p;
    // A 16-bit wire halves what crosses hosts only: inside them the ring moves float32.
    const double half = inside + 2.0 * (hosts - 1) * (15e-6 + bytes / 2 / hosts / 3e9);
    EXPECT_NEAR(simulate_step(nothing, params, buckets, p, true, c, 2, Hierarchy::kTwoLevel).step_s, half,
                1e-12 * half);
  }
  EXPECT_NEAR(two_level_allreduce_seconds(bytes, bytes, 16, two_links(1)),
              ring_allreduce_seconds(bytes, 16, two_links(1)), 1e-15);
  EXPECT_NEAR(two_level_allreduce_seconds(bytes, bytes, 8, c), ring_allreduce_seconds(bytes, 8, c), 1e-15);
  EXPECT_EQ(simulated_hierarchy(Hierarchy::kAuto, 8, c), Hierarchy::kFlat);
  EXPECT_EQ(simulated_hierarchy(Hierarchy::kAuto, 16, c), Hierarchy::kTwoLevel);
  EXPECT_EQ(simulated_hierarchy(Hierarchy::kAuto, 12, c), Hierarchy::kFlat);  // hosts of 8 and 4
  EXPECT_THROW(simulated_hierarchy(Hierarchy::kTwoLevel, 12, c), Error);
}

// Note [Compression cost] in dist/step_simulator.h: a bucket of a 1000 x 2000 weight (compressed at rank 4) and its bias
// is its products, then an allreduce of the bias with P (1000 + 4 x 1000 floats), then one of Q
// (4 x 2000); the products are priced per element at rank 1 and per rank more.
TEST(Simulate, ACompressedBucketCostsItsProductsAndTwoRings) {
  const std::vector<ParamExtent> params = {{0, 2'000'000}, {2'000'000, 1000}};
  const std::vector<std::vector<int64_t>> shapes = {{1000, 2000}, {1000}};
  const std::vector<Bucket> buckets = plan_buckets(params, 1 << 30, 1 << 30);
  ASSERT_EQ(buckets.size(), 1u);
  const std::vector<PowerSgdRounds> r = powersgd_rounds(params, shapes, buckets, PowerSgdOptions{4, 2, 0, 0});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].first_floats, 1000 + 4 * 1000);
  EXPECT_EQ(r[0].second_floats, 4 * 2000);
  EXPECT_EQ(r[0].elements, 2'000'000);
  EXPECT_EQ(r[0].element_ranks, 8'000'000);
  const ComputeProfile nothing{0, 0, {0, 0}};
  const ClusterModel c = two_links(1);
  const double products = 2e6 * 1.5e-9 + 6e6 * 0.25e-9;
  for (int p : {2, 16}) {
    const double want = products + ring_allreduce_seconds(4.0 * r[0].first_floats, p, c) +
                        ring_allreduce_seconds(4.0 * r[0].second_floats, p, c);
    const StepPrediction s = simulate_step(nothing, params, buckets, p, true, c, 4, Hierarchy::kFlat,
                                           {{r[0].first_floats, r[0].second_floats, products}});
    EXPECT_NEAR(s.step_s, want, 1e-12 * want) << p << " ranks";
  }
}

// A report's row for `ranks`, split into its columns.
std::vector<std::string> report_row(const std::string& report, int ranks) {
  std::istringstream in(report);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<std::string> row;
    for (std::string f; fields >> f;) row.push_back(f);
    if (!row.empty() && row[0] == std::to_string(ranks)) return row;
  }
  ADD_FAILURE() << "no row for " << ranks << " ranks in\n" << report;
  return std::vector<std::string>(10, "0");
}

// The same pricing through `simulate` from a cluster file: LeNet's compressed buckets at 4 ranks
// cost the file's products (ns per element at rank 1 and per rank more) and their two rings, as
// the closed form over the trainer's own bucket plan says.
TEST(Simulate, ACompressedReportPricesTheFilesProducts) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "rt_priced_cluster.toml";
  std::ofstream(path)
      << "ranks_per_host = 1\n[intra_host]\ngbit_per_s = 100\nlatency_us = 1\n"
         "[inter_host]\ngbit_per_s = 8\nlatency_us = 20\n[compute]\nbatch_per_rank = 64\n"
         "images_per_s = { lenet = 1000 }\npowersgd_ns_per_element = 1000\npowersgd_ns_per_rank = 250\n";
  Config config;
  config.model.name = "lenet";
  config.dist.compression = Compression::kPowerSgd;
  const SimulatedModel m = plan_model_for_simulation(config);
  const ClusterFile f = load_cluster_file(path.string(), "lenet");
  double want = 0;
  for (const PowerSgdRounds& r :
       powersgd_rounds(m.gradients.params, m.gradients.shapes, m.gradients.buckets, powersgd_options(config.dist)))
    want += 1e-6 * static_cast<double>(r.elements) + 0.25e-6 * static_cast<double>(r.element_ranks - r.elements) +
            ring_allreduce_seconds(4.0 * static_cast<double>(r.first_floats), 4, f.cluster) +
            ring_allreduce_seconds(4.0 * static_cast<double>(r.second_floats), 4, f.cluster);
  ASSERT_GT(want, 0.01);  // the products of LeNet's compressed tensors alone are tens of ms
  const std::vector<std::string> row = report_row(simulate_report(config, {4}, path.string()), 4);
  std::filesystem::remove(path);
  EXPECT_NEAR(std::stod(row[4]), want * 1e3, 0.051);  // comm_busy_ms
}

// The targets the two-level ring was built for at 512 H100, with ringtrain's defaults
// (dist.hierarchy = auto) on the shipped cluster files, TF32 and bf16 compute: 90% for ResNet-101
// and Inception-v3, above the paper's 68% for VGG-16; the flat ring falls short where the
// two-level ring gets there (docs/results/2026-11-25-two-level-ring.md).
TEST(Simulate, TwoLevelRingKeepsTheShippedH100ClusterEfficientAt512) {
  for (const char* cluster : {"h100_nvlink.toml", "h100_nvlink_bf16.toml"})
    for (const auto& [model, target] : {std::pair{"resnet101", 0.90}, {"inception_v3", 0.90}, {"vgg16", 0.68}}) {
      const std::string path = std::string(RT_SOURCE_DIR) + "/configs/clusters/" + cluster;
      const std::string config = std::string(RT_SOURCE_DIR) + "/configs/" + model + ".toml";
      const std::vector<std::string> two = report_row(simulate_report(load_config(config), {512}, path), 512);
      const std::vector<std::string> flat =
          report_row(simulate_report(load_config(config, {"dist.hierarchy=flat"}), {512}, path), 512);
      EXPECT_EQ(two[9], "two_level") << model << " on " << cluster;
      EXPECT_GE(std::stod(two[8]), target) << model << " on " << cluster;
      EXPECT_LT(std::stod(flat[8]), std::stod(two[8])) << model << " on " << cluster;
    }
}

// --straggler: the report's two added columns are the simulation of the slowed profile, and the
// other columns stay as they were. ResNet-101 at 512 H100s with one rank 10% slower: the job's
// efficiency falls by about the straggler's share (the step's compute is nearly all of it).
TEST(Simulate, TheStragglerColumnsPriceOneSlowRank) {
  const std::string path = std::string(RT_SOURCE_DIR) + "/configs/clusters/h100_nvlink.toml";
  const Config config = load_config(std::string(RT_SOURCE_DIR) + "/configs/resnet101.toml");
  const std::vector<std::string> plain = report_row(simulate_report(config, {512}, path), 512);
  const std::vector<std::string> row = report_row(simulate_report(config, {512}, path, 0, "", 0.10), 512);
  ASSERT_EQ(row.size(), plain.size() + 2);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(row[i], plain[i]) << "column " << i;
  const double step = std::stod(plain[2]), slow = std::stod(row[10]), efficiency = std::stod(row[11]);
  EXPECT_GT(slow, step * 1.08);
  EXPECT_LT(slow, step * 1.11);
  EXPECT_NEAR(efficiency, std::stod(plain[3]) / slow, 2e-3);
}

// --suggest on the paper's cluster, VGG-16 at 128 GPUs: its settings beat the defaults by more
// than the half percent it asks for, and `simulate` with them predicts the step it printed.
TEST(Simulate, SuggestionBeatsTheDefaultsAndSimulatesAsPrinted) {
  const std::string config = std::string(RT_SOURCE_DIR) + "/configs/vgg16.toml";
  const std::vector<std::string> s = report_row(suggest_report(load_config(config), {128}, kPaperCluster), 128);
  const double step_ms = std::stod(s[5]), config_step_ms = std::stod(s[7]);
  EXPECT_LT(step_ms, config_step_ms * 0.995);
  std::vector<std::string> settings = {"dist.hierarchy=" + s[1], "dist.bucket_mb=" + s[2],
                                       "dist.first_bucket_mb=" + s[3]};
  if (s[4] != "none") {
    ASSERT_EQ(s[4].rfind("powersgd:", 0), 0u) << s[4];
    settings.push_back("dist.compression=powersgd");
    settings.push_back("dist.powersgd_rank=" + s[4].substr(9));
  }
  const std::vector<std::string> again =
      report_row(simulate_report(load_config(config, settings), {128}, kPaperCluster), 128);
  EXPECT_NEAR(std::stod(again[2]), step_ms, 0.051);
  const std::vector<std::string> mine = report_row(simulate_report(load_config(config), {128}, kPaperCluster), 128);
  EXPECT_NEAR(std::stod(mine[2]), config_step_ms, 0.051);
}

// --autotune: the config's caps come first, every candidate's step is what `simulate` predicts with
// its caps, and the choice is the fastest where it gains more than 1%, else the config's: on the
// paper's cluster VGG-16 at 512 GPUs gains, ResNet-101 on 8 x H100 servers does not.
TEST(Simulate, AutotuneListsCandidatesAsSimulatedAndKeepsTheConfigsUnderOnePercent) {
  const auto check = [](const std::string& model, const std::string& cluster, bool gains) {
    const std::string config = std::string(RT_SOURCE_DIR) + "/configs/" + model + ".toml";
    const std::vector<std::string> row = report_row(autotune_report(load_config(config), {512}, cluster), 512);
    ASSERT_GE(row.size(), 8u);
    EXPECT_EQ(row[2], "25/1:") << model;
    std::string fastest;
    double fastest_ms = 1e30, own_ms = 0;
    size_t i = 2;
    for (; i + 1 < row.size() && row[i] != "->"; i += 2) {
      const std::string caps = row[i].substr(0, row[i].size() - 1);
      const double ms = std::stod(row[i + 1]);
      const size_t slash = caps.find('/');
      const std::vector<std::string> again =
          report_row(simulate_report(load_config(config, {"dist.bucket_mb=" + caps.substr(0, slash),
                                                          "dist.first_bucket_mb=" + caps.substr(slash + 1)}),
                                     {512}, cluster),
                     512);
      EXPECT_NEAR(std::stod(again[2]), ms, 0.051) << model << " at " << caps;
      if (i == 2) own_ms = ms;
      if (ms < fastest_ms) fastest_ms = ms, fastest = caps;
    }
    ASSERT_LT(i + 1, row.size());
    EXPECT_EQ(gains, fastest_ms < own_ms * 0.99) << model;
    EXPECT_EQ(row[i + 1], gains ? fastest : std::string("the")) << model;
  };
  check("vgg16", kPaperCluster, true);
  check("resnet101", std::string(RT_SOURCE_DIR) + "/configs/clusters/h100_nvlink.toml", false);
}

// PowerSGD where bandwidth bounds the step, and not where it does not: VGG-16 at 512 GPUs on the
// paper's 25 Gbit/s network, 68% plain, gets at least 90% with it; ResNet-101 on one server of
// 8 H100 over NVLink is proposed none (its products would cost more than the ring it saves).
TEST(Simulate, SuggestProposesPowerSgdOnlyWhereItPays) {
  const std::string vgg = std::string(RT_SOURCE_DIR) + "/configs/vgg16.toml";
  const std::vector<std::string> s = report_row(suggest_report(load_config(vgg), {512}, kPaperCluster), 512);
  EXPECT_EQ(s[4].rfind("powersgd:", 0), 0u) << s[4];
  EXPECT_GE(std::stod(s[6]), 0.90);
  EXPECT_LT(std::stod(s[8]), 0.72);  // the config's own, plain
  const std::string h100 = std::string(RT_SOURCE_DIR) + "/configs/clusters/h100_nvlink.toml";
  const std::string resnet = std::string(RT_SOURCE_DIR) + "/configs/resnet101.toml";
  EXPECT_EQ(report_row(suggest_report(load_config(resnet), {8}, h100), 8)[4], "none");
  // A cluster file that does not price the products: simulating compression names it and the key
  // to give, and --suggest leaves compression out.
  const std::filesystem::path unpriced = std::filesystem::temp_directory_path() / "rt_unpriced_cluster.toml";
  std::ofstream(unpriced) << "ranks_per_host = 4\n[intra_host]\ngbit_per_s = 80\nlatency_us = 5\n"
                             "[inter_host]\ngbit_per_s = 25\nlatency_us = 25\n"
                             "[compute]\nbatch_per_rank = 64\nimages_per_s = { vgg16 = 130.9 }\n";
  try {
    simulate_report(load_config(vgg, {"dist.compression=powersgd"}), {512}, unpriced.string());
    ADD_FAILURE() << "compression simulated without a price for its products";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(unpriced.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("powersgd_ns_per_element"), std::string::npos) << e.what();
  }
  EXPECT_EQ(report_row(suggest_report(load_config(vgg), {512}, unpriced.string()), 512)[4], "none");
  std::filesystem::remove(unpriced);
}

// The Horovod paper's scaling efficiencies (Sergeev & Del Balso, 2018): 16 GPUs over RDMA, and 128
// and 512 GPUs.
struct PaperModel {
  const char* name;
  double efficiency[3];  // at 16, 128, 512
};
const PaperModel kPaper[] = {{"inception_v3", {15.0 / 16, 0.90, 0.90}},
                             {"resnet101", {14.6 / 16, 0.90, 0.90}},
                             {"vgg16", {13.7 / 16, 0.79, 0.68}}};
const int kPaperRanks[] = {16, 128, 512};

struct Simulated {
  ComputeProfile profile;
  SimulatedModel model;
};

Simulated paper_setting(const std::string& name, const ClusterFile& f) {
  Config config;
  config.model.name = name;
  config.model.num_classes = 1000;
  config.dist.bucket_mb = config.dist.first_bucket_mb = 64;  // Horovod's fusion of the time
  Simulated s{{}, plan_model_for_simulation(config)};
  s.profile = profile_from_multiply_adds(*s.model.graph, static_cast<double>(f.batch_per_rank) / f.images_per_s);
  return s;
}

double efficiency(const Simulated& s, int ranks, const ClusterModel& c) {
  return simulate_step(s.profile, s.model.gradients.params, s.model.gradients.buckets, ranks, true, c).efficiency;
}

// The file's links at bandwidth share `share` and inter-host step latency `latency_s`.
ClusterModel with_constants(const ClusterFile& f, double share, double latency_s) {
  ClusterModel c = f.cluster;
  c.intra_host.bytes_per_s *= share / f.bandwidth_efficiency;
  c.inter_host.bytes_per_s *= share / f.bandwidth_efficiency;
  c.inter_host.latency_s = latency_s;
  c.cycle_s = 0.005;  // Horovod's cycle of the time
  return c;
}

TEST(Simulate, ReproducesThePapersEfficienciesWithConstantsFittedOnVgg16) {
  std::vector<Simulated> models;
  std::vector<ClusterFile> files;
  for (const PaperModel& m : kPaper) {
    files.push_back(load_cluster_file(kPaperCluster, m.name));
    models.push_back(paper_setting(m.name, files.back()));
  }
  const size_t vgg = 2;
  double best_share = 0, best_latency = 0, best_error = 1e30;
  for (double share = 0.50; share <= 1.0001; share += 0.02)
    for (double latency_us = 5; latency_us <= 100.0001; latency_us += 5) {
      const ClusterModel c = with_constants(files[vgg], share, latency_us * 1e-6);
      double error = 0;
      for (int k = 0; k < 3; ++k)
        error += std::pow(efficiency(models[vgg], kPaperRanks[k], c) - kPaper[vgg].efficiency[k], 2);
      if (error < best_error) best_error = error, best_share = share, best_latency = latency_us * 1e-6;
    }
  std::printf("fitted on vgg16: bandwidth share %.2f, inter-host latency %.0f us per ring step\n", best_share,
              best_latency * 1e6);
  for (size_t i = 0; i < models.size(); ++i) {
    const ClusterModel c = with_constants(files[i], best_share, best_latency);
    for (int k = 0; k < 3; ++k) {
      const double e = efficiency(models[i], kPaperRanks[k], c);
      std::printf("%-13s %3d GPUs: paper %5.1f%%  simulated %5.1f%%\n", kPaper[i].name, kPaperRanks[k],
                  100 * kPaper[i].efficiency[k], 100 * e);
      EXPECT_NEAR(100 * e, 100 * kPaper[i].efficiency[k], 5.0) << kPaper[i].name << " at " << kPaperRanks[k];
    }
  }
  // The cluster file carries the fit, so `ringtrain simulate` reproduces this table.
  EXPECT_NEAR(files[vgg].bandwidth_efficiency, best_share, 0.011) << kPaperCluster;
  EXPECT_NEAR(files[vgg].cluster.inter_host.latency_s, best_latency, 0.5e-6) << kPaperCluster;
}

}  // namespace
}  // namespace rt
