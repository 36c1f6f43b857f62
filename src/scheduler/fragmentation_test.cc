#include "scheduler/fragmentation.h"

#include <gtest/gtest.h>

#include <random>

#include "model/node_builder.h"

namespace xpool {
namespace {

PodShape Shape(int64_t cpu, int gpus, int64_t milli, std::vector<std::string> include = {}) {
  PodShape s;
  s.cpu_milli = cpu;
  s.gpu_count = gpus;
  s.gpu_milli = milli;
  s.type_include = std::move(include);
  return s;
}

NodeFree Free(int64_t cpu, std::vector<int64_t> gpus, std::string_view model = "G2") {
  NodeFree n;
  n.cpu_milli = cpu;
  n.gpu_milli = std::move(gpus);
  n.gpu_model.assign(n.gpu_milli.size(), model);
  return n;
}

// Node: 8 CPU free, GPUs free [1000, 500, 200, 0] milli (1700 idle), model G2. Values computed by hand.
TEST(FragmentationTest, ShapeFragmentByHand) {
  const NodeFree node = Free(8000, {1000, 500, 200, 0});
  struct Case {
    const char* what;
    PodShape shape;
    int64_t expect;
  } cases[] = {
      {"fits: GPUs below 300 are fragment", Shape(1000, 1, 300), 200},
      {"fits at 600: 500+200", Shape(1000, 1, 600, {"G2"}), 700},
      {"two whole GPUs do not fit: all idle", Shape(1000, 2, 1000), 1700},
      {"CPU-only shape: all idle", Shape(1000, 0, 0), 1700},
      {"not enough CPU: all idle", Shape(16000, 1, 100), 1700},
      {"model not allowed: all idle", Shape(1000, 1, 600, {"T4"}), 1700},
      {"one whole GPU fits: the rest is fragment", Shape(1000, 1, 1000), 700},
      {"exactly the free CPU fits", Shape(8000, 1, 500), 200},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(ShapeFragment(node, c.shape), c.expect);
  }
}

TEST(FragmentationTest, WeightedNodeFragmentByHand) {
  const NodeFree node = Free(8000, {1000, 500, 200, 0});
  std::vector<WeightedShape> counted = {{Shape(1000, 1, 300), 5}, {Shape(1000, 2, 1000), 2}, {Shape(1000, 1, 600), 3}};
  TargetWorkload t = TargetWorkload::FromCounts(counted, 100);
  ASSERT_EQ(t.total_count(), 10);
  // 5·200 + 2·1700 + 3·700 = 6500, i.e. F_n = 650 milli-GPU.
  EXPECT_EQ(WeightedNodeFragment(node, t), 6500);
}

TEST(FragmentationTest, TargetKeepsMostCommonShapesCovering95Percent) {
  TaskRequest a;
  a.cpu_milli = 1000;
  a.device_count = 1;
  a.device_compute_milli = 500;
  TaskRequest b;
  b.cpu_milli = 2000;
  TaskRequest c = a;
  c.type_include = {"T4"};
  std::vector<TaskRequest> requests;
  for (int i = 0; i < 2; ++i) requests.push_back(c);   // 2 % — seen first, but rare
  for (int i = 0; i < 93; ++i) requests.push_back(a);  // 93 %
  for (int i = 0; i < 5; ++i) requests.push_back(b);   // 5 %
  TargetWorkload t = TargetWorkload::FromRequests(requests);
  ASSERT_EQ(t.shapes().size(), 2u);
  EXPECT_EQ(t.shapes()[0].count, 93);
  EXPECT_EQ(t.shapes()[0].shape.gpu_milli, 500);
  EXPECT_EQ(t.shapes()[1].count, 5);
  EXPECT_EQ(t.shapes()[1].shape.gpu_count, 0);
  EXPECT_EQ(t.total_count(), 98);
}

TEST(FragmentationTest, MeasureClusterFromState) {
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("a").WithCpu(8000).WithGpus(2, "G2", 16384).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("b").WithCpu(8000).WithGpus(1, "T4", 16384).Build()).ok());
  Allocation alloc;
  alloc.node = 0;
  alloc.cpu_milli = 1000;
  alloc.devices = {DeviceGrant{0, 0, 700}};
  ASSERT_TRUE(state.Apply(alloc).ok());
  // Shape: 1 GPU at 500, G2 only. Node a: GPUs free [300, 1000] → fits, fragment 300. Node b: model not
  // allowed → fragment 1000. Cluster: 1300; idle 2300.
  TargetWorkload t = TargetWorkload::FromCounts({{Shape(1000, 1, 500, {"G2"}), 4}}, 95);
  ClusterFragment c = MeasureCluster(state, t);
  EXPECT_EQ(c.total_count, 4);
  EXPECT_EQ(c.weighted, 4 * 1300);
  EXPECT_EQ(c.idle_milli, 2300);
}

TEST(FragmentationTest, ModelMatchIsCaseInsensitiveSubstring) {
  EXPECT_TRUE(ShapeAllowsModel(Shape(0, 1, 100, {"v100"}), "V100M32"));
  EXPECT_FALSE(ShapeAllowsModel(Shape(0, 1, 100, {"A100"}), "V100M32"));
  PodShape s = Shape(0, 1, 100);
  s.type_exclude = {"T4"};
  EXPECT_FALSE(ShapeAllowsModel(s, "T4"));
  EXPECT_TRUE(ShapeAllowsModel(s, "G2"));
}

// WeightedNodeFragment groups the target's shapes (GPU count, share, models; CPU thresholds): it must equal the
// per-shape definition Σ count · ShapeFragment on any node, including CPU exactly at a threshold, model rules
// and a mixed-model node.
// A `mig:` request is served only by an idle instance of its profile, whole: every other device's idle compute is
// fragment to it (here a 3g.40gb, a 1g.10gb+me and a whole GPU beside the 1g.10gb it may take).
TEST(FragmentationTest, AMigShapeIsServedOnlyByAnIdleInstanceOfItsProfile) {
  TaskRequest request;
  request.cpu_milli = 1000;
  request.device_count = 1;
  request.device_compute_milli = 1000;
  request.mig_profile = "1g.10gb";
  const PodShape shape = ShapeOf(request);
  EXPECT_EQ(shape.mig_profile, "1g.10gb");
  EXPECT_EQ(shape.gpu_milli, 1);
  NodeFree node = Free(8000, {428, 142, 142, 1000});
  node.gpu_model = {"A100-SXM4-80GB MIG 3g.40gb", "A100-SXM4-80GB MIG 1g.10gb", "A100-SXM4-80GB MIG 1g.10gb+me",
                    "A100-SXM4-80GB"};
  EXPECT_EQ(ShapeFragment(node, shape), 428 + 142 + 1000);
  node.gpu_milli[1] = 0;  // the 1g.10gb held: nothing serves the shape
  EXPECT_EQ(ShapeFragment(node, shape), 428 + 142 + 1000);
  // The same shape without the profile is served by every device.
  request.mig_profile.clear();
  request.device_compute_milli = 100;
  EXPECT_EQ(ShapeFragment(node, ShapeOf(request)), 0);
  // Profiles make shapes differ (hash and equality), so a target keeps them apart.
  PodShape other = shape;
  other.mig_profile = "3g.40gb";
  EXPECT_FALSE(other == shape);
  EXPECT_NE(PodShapeHash()(other), PodShapeHash()(shape));
}

TEST(FragmentationTest, GroupedSumEqualsThePerShapeSum) {
  std::mt19937_64 rng(31);
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<WeightedShape> counted;
  for (int i = 0; i < 300; ++i) {
    const int gpus = pick(0, 4) == 0 ? 0 : pick(1, 4);
    PodShape s = Shape(1000 * pick(0, 12), gpus, gpus == 0 ? 0 : (pick(0, 2) == 0 ? 1000 : 50 * pick(1, 19)));
    if (pick(0, 9) == 0) s.type_include = {"t4"};
    if (pick(0, 14) == 0) s.type_exclude = {"G2"};
    counted.push_back({s, pick(1, 50)});
  }
  const TargetWorkload target = TargetWorkload::FromCounts(counted, 100);
  ASSERT_GT(target.shapes().size(), 100u);
  ASSERT_LT(target.gpu_groups().size(), target.shapes().size());
  for (int step = 0; step < 2000; ++step) {
    std::vector<int64_t> gpus(pick(0, 8));
    for (int64_t& g : gpus) g = 50 * pick(0, 20);
    NodeFree node = Free(1000 * pick(0, 14), gpus, pick(0, 1) == 0 ? "G2" : "T4");
    if (step % 5 == 0 && !gpus.empty()) node.gpu_model[0] = "T4-other";  // a mixed-model node
    int64_t expected = 0;
    for (const WeightedShape& w : target.shapes()) expected += w.count * ShapeFragment(node, w.shape);
    ASSERT_EQ(WeightedNodeFragment(node, target), expected) << "step " << step;
  }
}

// FragmentMeter's per-model tables must give WeightedNodeFragment's value exactly: random targets (share and
// CPU-only shapes, model rules, CPU at the thresholds), random nodes of several models (each model's table is
// built on first use and reused), mixed-model and device-less nodes, and a Reset to another target.
TEST(FragmentationTest, MeterEqualsWeightedNodeFragment) {
  std::mt19937_64 rng(47);
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* models[] = {"G2", "T4", "V100M32", "P100"};
  FragmentMeter meter;
  for (int round = 0; round < 4; ++round) {
    std::vector<WeightedShape> counted;
    for (int i = 0; i < 40 + 80 * round; ++i) {
      const int gpus = pick(0, 4) == 0 ? 0 : (pick(0, 3) == 0 ? pick(1, 8) : 1);
      PodShape s = Shape(1000 * pick(0, 12), gpus, gpus == 0 ? 0 : (pick(0, 2) == 0 ? 1000 : 10 * pick(1, 99)));
      if (pick(0, 9) == 0) s.type_include = {pick(0, 1) == 0 ? "t4" : "v100"};
      if (pick(0, 14) == 0) s.type_exclude = {"G2"};
      counted.push_back({s, pick(1, 50)});
    }
    const TargetWorkload target = TargetWorkload::FromCounts(counted, pick(90, 100));
    meter.Reset(&target);
    for (int step = 0; step < 2000; ++step) {
      std::vector<int64_t> gpus(pick(0, 8));
      for (int64_t& g : gpus) g = pick(0, 3) == 0 ? 1000 : 10 * pick(0, 100);
      const int64_t cpu = pick(0, 1) == 0 ? 1000 * pick(0, 14) : 250 * pick(0, 60);
      NodeFree node = Free(cpu, gpus, models[pick(0, 3)]);
      if (step % 7 == 0 && !gpus.empty()) node.gpu_model[0] = "T4-other";  // a mixed-model node
      SCOPED_TRACE(::testing::Message() << "round " << round << " step " << step);
      ASSERT_EQ(meter.Weighted(node), WeightedNodeFragment(node, target));
    }
  }
}

}  // namespace
}  // namespace xpool
