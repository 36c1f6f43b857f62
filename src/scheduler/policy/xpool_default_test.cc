// Tests of DefaultPolicy ("default"): the resource-aware fragment computed by hand, and the placement decisions
// that set it apart from FGD (CPU / memory stranding, scarce models, device choice) on small hand-built clusters.
#include "scheduler/policy/xpool_default.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "model/node_builder.h"
#include "scheduler/fit.h"
#include "scheduler/policy/fgd.h"
#include "scheduler/schedule.h"

namespace xpool {
namespace {

TaskRequest Pod(int64_t cpu, int count, int64_t milli, int64_t memory_mib = 0) {
  TaskRequest r;
  r.cpu_milli = cpu;
  r.memory_mib = memory_mib;
  r.device_count = count;
  r.device_compute_milli = milli;
  return r;
}

PodShape Shape(int64_t cpu, int count, int64_t milli) {
  PodShape s;
  s.cpu_milli = cpu;
  s.gpu_count = count;
  s.gpu_milli = milli;
  return s;
}

NodeFree Free(int64_t cpu, std::vector<int64_t> gpu, std::string_view model = "G2") {
  NodeFree n;
  n.cpu_milli = cpu;
  n.gpu_milli = std::move(gpu);
  n.gpu_model.assign(n.gpu_milli.size(), model);
  return n;
}

// Teaches `policy` a target workload: `count` arrivals (a power of two, so the target is rebuilt after the last).
void Learn(PlacementPolicy* policy, const TaskRequest& r, int count) {
  for (int i = 0; i < count; ++i) policy->OnArrival(r);
}

int PlaceOn(const ClusterState& state, PlacementPolicy* policy, const TaskRequest& r,
            std::vector<int>* devices = nullptr) {
  Rng rng(1);
  ScheduleOutcome out = Schedule(state, r, *policy, rng);
  if (out.kind != OutcomeKind::kPlaced) return -1;
  if (devices != nullptr) {
    devices->clear();
    for (const DeviceGrant& g : out.allocation.devices) devices->push_back(g.device);
  }
  return out.allocation.node;
}

// Step 2 written shape by shape, device by device (how it reads in docs/scheduling.md): the oracle for what
// ResourceFragment runs (FGD's fragment by FragmentMeter, plus the memory stranding of only the groups a node's
// memory may not feed, found through ShapeGroups' per-CPU-rank lists).
int64_t FragmentShapeByShape(const NodeFree& node, int64_t memory_mib, const TargetWorkload& target,
                             const std::vector<int64_t>& shape_memory_mib, int64_t strand_percent) {
  int64_t idle = 0;
  for (int64_t g : node.gpu_milli) idle += g;
  int64_t sum = 0;
  for (size_t m = 0; m < target.shapes().size(); ++m) {
    const PodShape& shape = target.shapes()[m].shape;
    int64_t fragment = idle;
    if (shape.gpu_count > 0 && shape.gpu_milli > 0 && node.cpu_milli >= shape.cpu_milli) {
      int usable = 0;
      int64_t pods_gpu = 0, usable_milli = 0, unusable_milli = 0;
      for (size_t i = 0; i < node.gpu_milli.size(); ++i) {
        const int64_t g = node.gpu_milli[i];
        if (ShapeAllowsModel(shape, node.gpu_model[i]) && g >= shape.gpu_milli) {
          ++usable;
          usable_milli += g;
          if (shape.gpu_count == 1) pods_gpu += g / shape.gpu_milli;
        } else {
          unusable_milli += g;
        }
      }
      if (shape.gpu_count > 1) pods_gpu = usable / shape.gpu_count;
      if (usable >= shape.gpu_count) {
        int64_t pods_res = pods_gpu;
        const int64_t mem = m < shape_memory_mib.size() ? shape_memory_mib[m] : 0;
        if (mem > 0) pods_res = std::min(pods_res, memory_mib / mem);
        fragment = pods_res <= 0
                       ? idle
                       : unusable_milli + usable_milli * (pods_gpu - pods_res) / pods_gpu * strand_percent / 100;
      }
    }
    sum += target.shapes()[m].count * fragment;
  }
  return sum;
}

TEST(DefaultResourceFragment, GroupedEqualsShapeByShapeOnRandomNodesAndTargets) {
  Rng rng(20261201);
  auto draw = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const std::vector<std::string> models = {"A100", "V100", "T4"};
  for (int round = 0; round < 300; ++round) {
    std::vector<WeightedShape> counted;
    const int shapes = static_cast<int>(draw(1, 40));
    for (int k = 0; k < shapes; ++k) {
      PodShape s = Shape(draw(0, 8) * 1000, static_cast<int>(draw(0, 3)), draw(0, 1) ? 1000 : draw(1, 10) * 100);
      if (s.gpu_count == 0) s.gpu_milli = 0;
      if (draw(0, 4) == 0) s.type_include = {models[draw(0, 2)]};
      if (draw(0, 6) == 0) s.type_exclude = {models[draw(0, 2)]};
      if (std::none_of(counted.begin(), counted.end(), [&](const WeightedShape& w) { return w.shape == s; })) {
        counted.push_back({s, draw(1, 50)});
      }
    }
    const TargetWorkload target = TargetWorkload::FromCounts(counted, 100);
    std::vector<int64_t> memory(target.shapes().size());
    for (int64_t& m : memory) m = draw(0, 2) == 0 ? 0 : draw(1, 64) * 1024;
    // Devices: up to 20 (more than 16 free levels reads device by device), one model or several.
    std::vector<int64_t> gpu(static_cast<size_t>(draw(0, 20)));
    for (int64_t& g : gpu) g = draw(0, 2) == 0 ? 1000 : draw(0, 1000);
    NodeFree node = Free(draw(0, 16) * 1000, gpu, models[draw(0, 2)]);
    if (draw(0, 3) == 0) {
      for (std::string_view& m : node.gpu_model) m = models[draw(0, 2)];
    }
    const int64_t free_memory = draw(-4, 512) * 1024;
    const int64_t strand = draw(50, 125);
    EXPECT_EQ(DefaultPolicy::ResourceFragment(node, free_memory, target, memory, strand),
              FragmentShapeByShape(node, free_memory, target, memory, strand))
        << "round " << round;
  }
}

TEST(DefaultResourceFragment, NothingLearnedStrandsNothing) {
  const NodeFree node = Free(8000, {1000, 1000, 300, 0});
  EXPECT_EQ(DefaultPolicy::MemoryStranded(node, 1024, DefaultPolicy::ShapeGroups{}, 100), 0);
  const DefaultPolicy::ShapeGroups none = DefaultPolicy::ShapeGroups::Of(TargetWorkload(), {});
  EXPECT_EQ(DefaultPolicy::MemoryStranded(node, 1024, none, 100), 0);
  EXPECT_EQ(DefaultPolicy::ResourceFragment(node, 1024, TargetWorkload(), {}), 0);
}

// A `mig:` shape is served only by instances of its profile: its memory strands nothing on whole GPUs or on
// instances of another profile, and two profiles are two groups.
TEST(DefaultResourceFragment, MigShapesStrandOnlyTheirProfilesInstances) {
  PodShape three = Shape(4000, 1, 1);
  three.mig_profile = "3g.40gb";
  PodShape one = three;
  one.mig_profile = "1g.10gb";
  const TargetWorkload target = TargetWorkload::FromCounts({{three, 1}, {one, 1}}, 100);
  const DefaultPolicy::ShapeGroups groups = DefaultPolicy::ShapeGroups::Of(target, {30 * 1024, 8 * 1024});
  EXPECT_EQ(groups.groups.size(), 2u);
  EXPECT_EQ(DefaultPolicy::MemoryStranded(Free(64000, {1000, 1000}, "A100"), 1024, groups, 100), 0);
  EXPECT_EQ(DefaultPolicy::MemoryStranded(Free(64000, {142, 142}, "A100 MIG 1g.10gb"), 1024, groups, 100), 284);
}

TEST(DefaultResourceFragment, CountsGpuThatMemoryCannotFeed) {
  const TargetWorkload target = TargetWorkload::FromCounts({{Shape(4000, 1, 1000), 1}}, 100);
  // Enough memory (or memory unknown): FGD's fragment (nothing).
  EXPECT_EQ(DefaultPolicy::ResourceFragment(Free(64000, std::vector<int64_t>(8, 1000)), 0, target, {}), 0);
  // CPU is only FGD's fit test: 16000 feeds 4 of the 8 possible pods, yet nothing counts as stranded.
  EXPECT_EQ(DefaultPolicy::ResourceFragment(Free(16000, std::vector<int64_t>(8, 1000)), 0, target, {}), 0);
  // Memory for 2 pods of 50 GiB: 6 of 8 pods' GPU stranded.
  EXPECT_EQ(
      DefaultPolicy::ResourceFragment(Free(64000, std::vector<int64_t>(8, 1000)), 100 * 1024, target, {50 * 1024}),
      6000);
  // Memory for none: every idle GPU is fragment, as when the CPU does not fit.
  EXPECT_EQ(DefaultPolicy::ResourceFragment(Free(64000, {1000, 1000}), 1024, target, {50 * 1024}), 2000);
  EXPECT_EQ(DefaultPolicy::ResourceFragment(Free(3000, {1000, 1000}), 0, target, {}), 2000);
}

// Step 2's weight: GPU stranded by memory counts w = clamp((ρ / 0.75)², ½, 1¼) of itself, ρ the workload's memory
// per GPU against the cluster's.
TEST(DefaultResourceFragment, MemoryStrandingIsWeightedByTheWorkloadsMemoryPerGpu) {
  EXPECT_EQ(DefaultPolicy::MemoryStrandPercent(0.75), 100);
  EXPECT_NEAR(DefaultPolicy::MemoryStrandPercent(0.6), 64, 1);  // (0.8)², truncated
  EXPECT_EQ(DefaultPolicy::MemoryStrandPercent(0.3), 50);       // at least ½
  EXPECT_EQ(DefaultPolicy::MemoryStrandPercent(1.5), 125);      // at most 1¼
  EXPECT_EQ(DefaultPolicy::MemoryStrandPercent(0.0), 50);
  const TargetWorkload target = TargetWorkload::FromCounts({{Shape(4000, 1, 1000), 1}}, 100);
  const NodeFree eight = Free(64000, std::vector<int64_t>(8, 1000));
  // Memory for 2 of 8 pods of 50 GiB: 6000 stranded, counted at w.
  EXPECT_EQ(DefaultPolicy::ResourceFragment(eight, 100 * 1024, target, {50 * 1024}, 100), 6000);
  EXPECT_EQ(DefaultPolicy::ResourceFragment(eight, 100 * 1024, target, {50 * 1024}, 50), 3000);
  EXPECT_EQ(DefaultPolicy::ResourceFragment(eight, 100 * 1024, target, {50 * 1024}, 125), 7500);
  // Memory for none: all idle GPU, whatever w (as when the CPU does not fit).
  EXPECT_EQ(DefaultPolicy::ResourceFragment(Free(64000, {1000, 1000}), 1024, target, {50 * 1024}, 50), 2000);
}

TEST(DefaultResourceFragment, MatchesFgdWhenNothingIsStranded) {
  const TargetWorkload target =
      TargetWorkload::FromCounts({{Shape(1000, 1, 500), 3}, {Shape(1000, 2, 1000), 1}, {Shape(2000, 0, 0), 1}}, 100);
  for (const NodeFree& n : {Free(64000, {400, 1000, 700, 0}), Free(64000, {1000, 1000}), Free(2000, {300, 1000}),
                            Free(64000, {500, 500, 500, 1000})}) {
    EXPECT_EQ(DefaultPolicy::ResourceFragment(n, 0, target, {}), WeightedNodeFragment(n, target));
  }
  // Sharing shape: two 1000-free GPUs host 4 pods of 500; memory for 3 of the 4 → a quarter of 2000 stranded.
  const TargetWorkload half = TargetWorkload::FromCounts({{Shape(1000, 1, 500), 1}}, 100);
  EXPECT_EQ(DefaultPolicy::ResourceFragment(Free(64000, {1000, 1000}), 3 * 1024, half, {1024}), 500);
}

// Step 3: the idle GPU beyond what the node's free CPU feeds at c̄ CPU per GPU.
TEST(DefaultResourceFragment, CpuStrandedGpuIsTheIdleGpuTheCpuCannotFeed) {
  const NodeFree eight = Free(16000, std::vector<int64_t>(8, 1000));
  EXPECT_EQ(DefaultPolicy::CpuStrandedGpu(eight, 4.0), 4000);  // 16 cores feed 4 of 8 GPUs at 4 cores / GPU
  EXPECT_EQ(DefaultPolicy::CpuStrandedGpu(eight, 2.0), 0);     // they feed all 8 at 2 cores / GPU
  EXPECT_EQ(DefaultPolicy::CpuStrandedGpu(eight, 0.0), 0);     // nothing learned yet
  EXPECT_EQ(DefaultPolicy::CpuStrandedGpu(Free(0, {300, 1000}), 4.0), 1300);
  EXPECT_EQ(DefaultPolicy::CpuStrandedGpu(Free(96000, {0, 0}), 4.0), 0);  // no idle GPU
}

// c̄ is the GPU shapes' CPU per GPU while the cluster has CPU to spare, every shape's once the CPU binds.
TEST(DefaultPolicyTest, LearnsTheCpuPerGpuAndWhetherTheCpuBinds) {
  ClusterState state;  // 4 GPUs, 140 cores: 35 cores per GPU
  ASSERT_TRUE(state.AddNode(MakeNode("a").WithCpu(40000).WithGpus(2, "G2", 16384).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("b").WithCpu(100000).WithGpus(2, "G2", 16384).Build()).ok());
  DefaultPolicy spare;  // asks (8·8 + 8·20) / 8 = 28 cores per GPU
  Learn(&spare, Pod(8000, 1, 1000), 8);
  Learn(&spare, Pod(20000, 0, 0), 8);
  DefaultPolicy binds;  // asks (8·8 + 8·28) / 8 = 36 cores per GPU
  Learn(&binds, Pod(8000, 1, 1000), 8);
  Learn(&binds, Pod(28000, 0, 0), 8);
  for (DefaultPolicy* p : {&spare, &binds}) {
    p->OnPlaced(state, Pod(8000, 1, 1000), Allocation{});  // learns the cluster
    PlaceOn(state, p, Pod(8000, 1, 1000));                 // scores once: the learned state is current
  }
  EXPECT_FALSE(spare.cpu_binds());
  EXPECT_DOUBLE_EQ(spare.cpu_per_gpu(), 8.0);  // the GPU shape's 8 cores per GPU
  EXPECT_TRUE(binds.cpu_binds());
  EXPECT_DOUBLE_EQ(binds.cpu_per_gpu(), 36.0);
}

TEST(DefaultPolicyTest, CpuHeavyGpuPodGoesWhereTheCpuIsPlentiful) {
  // Two idle 8-GPU nodes, "lean" (24 cores) and "rich" (96); the workload asks 2 cores per GPU. A 12-core GPU pod
  // fits both and leaves both with 7 GPUs, but on "lean" 12 cores feed only 6 of them at 2 cores per GPU:
  // step 3 sends it to "rich" (FGD's measure and the best-fit ties took "lean").
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("lean").WithCpu(24000).WithGpus(8, "G2", 16384).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("rich").WithCpu(96000).WithGpus(8, "G2", 16384).Build()).ok());
  DefaultPolicy policy;
  Learn(&policy, Pod(2000, 1, 1000), 16);
  EXPECT_EQ(PlaceOn(state, &policy, Pod(12000, 1, 1000)), 1);
  // A pod as lean as the workload strands nothing on "lean" and packs it (least free CPU).
  EXPECT_EQ(PlaceOn(state, &policy, Pod(2000, 1, 1000)), 0);
}

TEST(DefaultPolicyTest, CpuOnlyPodAvoidsTheCpuOfIdleGpusOnlyWhenTheCpuBinds) {
  // "a": 2 idle GPUs, 40 cores; "b": 2 idle GPUs, 100 cores (35 cores per GPU in all). An 8-core CPU-only pod:
  // while the workload leaves CPU to spare it packs "a" (least free CPU); once the workload asks more CPU per GPU
  // than the cluster has (36 > 35), taking cores on "a" strands GPU there (40 cores feed 1.1 of 2 GPUs at 36 per
  // GPU), so it goes to "b", whose 100 cores feed both GPUs either way.
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("a").WithCpu(40000).WithGpus(2, "G2", 16384).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("b").WithCpu(100000).WithGpus(2, "G2", 16384).Build()).ok());
  DefaultPolicy spare;
  Learn(&spare, Pod(8000, 1, 1000), 8);
  Learn(&spare, Pod(20000, 0, 0), 8);
  DefaultPolicy binds;
  Learn(&binds, Pod(8000, 1, 1000), 8);
  Learn(&binds, Pod(28000, 0, 0), 8);
  for (DefaultPolicy* p : {&spare, &binds}) p->OnPlaced(state, Pod(8000, 1, 1000), Allocation{});
  EXPECT_EQ(PlaceOn(state, &spare, Pod(8000, 0, 0)), 0);
  EXPECT_EQ(PlaceOn(state, &binds, Pod(8000, 0, 0)), 1);
}

TEST(DefaultPolicyTest, UnconstrainedPodLeavesTheModelThatRarePodsNeed) {
  // A 4-GPU T4 node and an idle 8-GPU G2 node; the workload: 15 unconstrained whole-GPU pods, 1 two-GPU pod
  // that may use only T4. An unconstrained pod on "g2" lowers the measure (G2's idle GPU is fragment for the
  // T4-only shape): Δ = +1000 / 16 milli, score 51 against 50 on "t4", so it goes to "g2". (A best-fit term
  // in the score would favour the node left with less free GPU, "t4" here, and so pack the small nodes of scarce
  // models.)
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("t4").WithCpu(96000).WithGpus(4, "T4", 16384).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("g2").WithCpu(96000).WithGpus(8, "G2", 16384).Build()).ok());
  TaskRequest t4_pair = Pod(4000, 2, 1000);
  t4_pair.type_include = {"T4"};
  DefaultPolicy policy;
  Learn(&policy, Pod(4000, 1, 1000), 15);
  Learn(&policy, t4_pair, 1);
  EXPECT_EQ(PlaceOn(state, &policy, Pod(4000, 1, 1000)), 1);
  EXPECT_EQ(PlaceOn(state, &policy, t4_pair), 0);
}

TEST(DefaultPolicyTest, MemoryHeavyPodGoesWhereMemoryIsPlentiful) {
  ClusterState state;
  ASSERT_TRUE(
      state.AddNode(MakeNode("small").WithCpu(96000).WithMemory(256 * 1024).WithGpus(8, "G2", 16384).Build()).ok());
  ASSERT_TRUE(
      state.AddNode(MakeNode("big").WithCpu(96000).WithMemory(1024 * 1024).WithGpus(8, "G2", 16384).Build()).ok());
  DefaultPolicy policy;
  const TaskRequest typical = Pod(4000, 1, 1000, 32 * 1024);
  Learn(&policy, typical, 8);
  for (int i = 0; i < 4; ++i) policy.OnPlaced(state, typical, Allocation{});  // learns 32 GiB per pod
  // 128 GiB on "small" would leave 128 GiB for 7 GPUs (4 pods of 32 GiB): 3 GPUs stranded.
  EXPECT_EQ(PlaceOn(state, &policy, Pod(4000, 1, 1000, 128 * 1024)), 1);
}

// The score reads the request's memory, which its cache key (the request shape) leaves out: a score cached for
// one request must not be reused for a request of the same shape and other memory.
TEST(DefaultPolicyTest, CachedScoreIsForTheRequestsOwnMemory) {
  ClusterState state;
  ASSERT_TRUE(
      state.AddNode(MakeNode("small").WithCpu(96000).WithMemory(256 * 1024).WithGpus(8, "G2", 16384).Build()).ok());
  const TaskRequest typical = Pod(4000, 1, 1000, 32 * 1024);
  const TaskRequest heavy = Pod(4000, 1, 1000, 128 * 1024);
  DefaultPolicy cached;
  DefaultPolicy fresh;
  for (DefaultPolicy* p : {&cached, &fresh}) {
    Learn(p, typical, 8);
    for (int i = 0; i < 4; ++i) p->OnPlaced(state, typical, Allocation{});
  }
  NodeCandidate all;
  all.node = 0;
  for (int d = 0; d < 8; ++d) all.fitting_devices.push_back(d);
  Rng rng(1);
  int64_t typical_score = 0, heavy_score = 0, fresh_heavy_score = 0;
  std::vector<int> devices;
  ASSERT_TRUE(cached.Score(state, typical, all, rng, &typical_score, &devices));
  ASSERT_TRUE(cached.Score(state, heavy, all, rng, &heavy_score, &devices));
  ASSERT_TRUE(fresh.Score(state, heavy, all, rng, &fresh_heavy_score, &devices));
  EXPECT_EQ(heavy_score, fresh_heavy_score);
  EXPECT_NE(heavy_score, typical_score);  // 128 GiB strands GPU that 32 GiB does not
}

TEST(DefaultPolicyTest, KeepsScarceModelForThePodsThatNeedIt) {
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("v100").WithCpu(96000).WithGpus(2, "V100M32", 32768).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("g2").WithCpu(96000).WithGpus(2, "G2", 16384).Build()).ok());
  DefaultPolicy policy;
  TaskRequest needs_v100 = Pod(4000, 1, 1000);
  needs_v100.type_include = {"V100M32"};
  Learn(&policy, Pod(4000, 1, 1000), 4);
  Learn(&policy, needs_v100, 4);
  // An unconstrained pod goes to G2, whatever the node order, leaving the V100s to the pods that need them.
  EXPECT_EQ(PlaceOn(state, &policy, Pod(4000, 1, 1000)), 1);
  EXPECT_EQ(PlaceOn(state, &policy, needs_v100), 0);
}

TEST(DefaultPolicyTest, ReservePerMilleIsTheConfinedDemandsShareOfTheModelsFreeGpu) {
  struct Row {
    int64_t exclusive, demand, free_model, free_total, want;
  };
  for (const Row& r : std::vector<Row>{{0, 100, 10, 100, 0},      // nothing confined to the model
                                       {10, 100, 10, 100, 1000},  // 10 % of the demand, 10 % of the free GPU
                                       {5, 100, 10, 100, 500},
                                       {1, 100, 100, 100, 10},
                                       {50, 100, 10, 100, 1000},  // more than it has: all of it
                                       {5, 100, 0, 100, 1000},    // nothing free
                                       {5, 0, 10, 100, 0}}) {
    SCOPED_TRACE(testing::Message() << r.exclusive << "/" << r.demand << " " << r.free_model << "/" << r.free_total);
    EXPECT_EQ(DefaultPolicy::ReservePerMille(r.exclusive, r.demand, r.free_model, r.free_total), r.want);
  }
}

TEST(DefaultPolicyTest, UnconstrainedPodLeavesTheModelItsConfinedPodsNeedMost) {
  // A 4-GPU T4 node and an 8-GPU G2 node; the workload: 8 unconstrained whole-GPU pods, 4 that may use only T4
  // and 4 only G2. The fragment gained is the same on both (each model's idle GPU is fragment for the pods
  // confined to the other) and the tie goes to the node left with less free GPU, "t4"; but the T4-only pods
  // need 3/4 of T4's free GPU (r = 4/16 · 12/4) and the G2-only ones 3/8 of G2's: step 7 sends it to "g2".
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("t4").WithCpu(96000).WithGpus(4, "T4", 16384).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("g2").WithCpu(96000).WithGpus(8, "G2", 16384).Build()).ok());
  TaskRequest t4_only = Pod(4000, 1, 1000);
  t4_only.type_include = {"T4"};
  TaskRequest g2_only = Pod(4000, 1, 1000);
  g2_only.type_include = {"G2"};
  DefaultPolicy policy;
  Learn(&policy, Pod(4000, 1, 1000), 8);
  Learn(&policy, t4_only, 4);
  Learn(&policy, g2_only, 4);
  EXPECT_EQ(PlaceOn(state, &policy, Pod(4000, 1, 1000)), 1);
  EXPECT_EQ(policy.reserve_per_mille("T4"), 750);
  EXPECT_EQ(policy.reserve_per_mille("G2"), 375);
  EXPECT_EQ(PlaceOn(state, &policy, t4_only), 0);  // a confined pod takes its own model's reserve
}

TEST(DefaultPolicyTest, UnconstrainedPodLeavesTheModelsAListOfThemNeeds) {
  // 4 T4 GPUs, 2 V100M32 and 8 G2; the workload: 8 unconstrained whole-GPU pods, 4 that may use T4 or V100M32 and 4
  // only G2. The fragment gained is the same on every node (each side's idle GPU is fragment for the pods confined
  // to the other), and a reserve for single models alone keeps G2 (r = 4/16 · 14/8): the pod would take T4. The
  // list's demand needs 7/12 of its 6 free GPUs (r = 4/16 · 14/6), more than G2's pods need of G2: it goes to "g2".
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("t4").WithCpu(96000).WithGpus(4, "T4", 16384).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("v100").WithCpu(96000).WithGpus(2, "V100M32", 32768).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("g2").WithCpu(96000).WithGpus(8, "G2", 16384).Build()).ok());
  TaskRequest listed = Pod(4000, 1, 1000);
  listed.type_include = {"T4", "V100M32"};
  TaskRequest g2_only = Pod(4000, 1, 1000);
  g2_only.type_include = {"G2"};
  DefaultPolicy policy;
  Learn(&policy, Pod(4000, 1, 1000), 8);
  Learn(&policy, listed, 4);
  Learn(&policy, g2_only, 4);
  EXPECT_EQ(PlaceOn(state, &policy, Pod(4000, 1, 1000)), 2);
  EXPECT_EQ(policy.reserve_per_mille("T4"), 583);
  EXPECT_EQ(policy.reserve_per_mille("V100M32"), 583);
  EXPECT_EQ(policy.reserve_per_mille("G2"), 437);
  EXPECT_EQ(PlaceOn(state, &policy, listed), 1);  // within its list it pays nothing: the tighter node
}

TEST(DefaultPolicyTest, CpuHeavyPodLeavesTheOnlyNodeKindAWholeNodePodFits) {
  // "g3": 8 GPUs and 128 cores, "g2": 8 GPUs and 96 cores; the workload: 15 one-GPU 12-core pods and one 8-GPU pod
  // of 120 cores, which only g3 can host. A 24-core one-GPU pod strands GPU on g2 by CPU (step 3, c̄ = 13 cores
  // per GPU), more than it costs the one 8-GPU pod on g3: without a reserve it takes g3. That pod's demand needs
  // 7/10 of g3's free GPU (r = 8/23 · 16/8): it goes to g2.
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("g3").WithCpu(128000).WithGpus(8, "G3", 16384).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("g2").WithCpu(96000).WithGpus(8, "G2", 16384).Build()).ok());
  DefaultPolicy policy;
  Learn(&policy, Pod(12000, 1, 1000), 15);
  Learn(&policy, Pod(120000, 8, 1000), 1);
  EXPECT_EQ(PlaceOn(state, &policy, Pod(24000, 1, 1000)), 1);
  EXPECT_EQ(policy.reserve_per_mille("G3"), 695);
  EXPECT_EQ(policy.reserve_per_mille("G2"), 0);
  EXPECT_EQ(PlaceOn(state, &policy, Pod(120000, 8, 1000)), 0);
}

TEST(DefaultPolicyTest, ReservesForTheMultiGpuPodsWhoseMemoryOnlyOneKindHas) {
  // "v32": 8 GPUs, 768 GiB, first in node order; "g2": 8 GPUs, 384 GiB. The workload: 8 one-GPU pods and 8-GPU
  // pods of 300 GiB (7) and 600 GiB (1, only v32 hosts it). Their mean, 337.5 GiB, fits g2: step 7 split by the
  // mean keeps nothing, and a one-GPU pod, which costs both nodes the same fragment, takes the tie's first node,
  // v32. Split by the memory each arrival asked, 8 of the 72 GPUs asked need v32 (r = 8/72 · 16/8): it goes to g2.
  ClusterState state;
  ASSERT_TRUE(
      state.AddNode(MakeNode("v32").WithCpu(96000).WithMemory(786432).WithGpus(8, "V100M32", 32768).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("g2").WithCpu(96000).WithMemory(393216).WithGpus(8, "G2", 16384).Build()).ok());
  DefaultPolicy policy;
  const TaskRequest one = Pod(8000, 1, 1000, 16384);
  const TaskRequest small = Pod(64000, 8, 1000, 307200);
  const TaskRequest big = Pod(64000, 8, 1000, 614400);
  for (const auto& [r, count] : std::vector<std::pair<TaskRequest, int>>{{one, 8}, {small, 7}, {big, 1}}) {
    Learn(&policy, r, count);
    for (int i = 0; i < count; ++i) policy.OnPlaced(state, r, Allocation{});  // learns the mean memory
  }
  EXPECT_EQ(PlaceOn(state, &policy, one), 1);
  EXPECT_EQ(policy.reserve_per_mille("V100M32"), 222);
  EXPECT_EQ(policy.reserve_per_mille("G2"), 0);
  EXPECT_EQ(PlaceOn(state, &policy, big), 0);
}

// "t4": 2 GPUs, "g2": 8; a policy that saw 31 unconstrained one-GPU pods and one that may use only `model`, too
// rare (1/32 of the pods) for the target's 95 %. Returns that constrained pod.
TaskRequest LearnOneRareConfinedPod(ClusterState* state, DefaultPolicy* policy, const std::string& model) {
  EXPECT_TRUE(state->AddNode(MakeNode("t4").WithCpu(96000).WithGpus(2, "T4", 16384).Build()).ok());
  EXPECT_TRUE(state->AddNode(MakeNode("g2").WithCpu(96000).WithGpus(8, "G2", 16384).Build()).ok());
  TaskRequest only = Pod(4000, 1, 1000);
  only.type_include = {model};
  Learn(policy, Pod(4000, 1, 1000), 31);
  Learn(policy, only, 1);
  return only;
}

TEST(DefaultPolicyTest, ReservesForConfinedPodsTooRareForTheTarget) {
  // The tie-break alone sends an unconstrained pod to the node left with less free GPU, t4; step 7 counts every
  // arrival, so the T4-only pod's demand keeps t4 (r = 1/32 · 10/2).
  ClusterState state;
  DefaultPolicy policy;
  const TaskRequest t4_only = LearnOneRareConfinedPod(&state, &policy, "T4");
  EXPECT_EQ(policy.target().shapes().size(), 1u);  // the T4-only shape is outside the target
  EXPECT_EQ(PlaceOn(state, &policy, Pod(4000, 1, 1000)), 1);
  EXPECT_EQ(policy.reserve_per_mille("T4"), 156);
  EXPECT_EQ(PlaceOn(state, &policy, t4_only), 0);
}

TEST(DefaultPolicyTest, NoReserveForRarePodsWhoseHostsAreMostOfTheCluster) {
  // As above, but the rare pod may use only G2, 8 of the 10 free GPUs: its pods find room there without a
  // reserve, which the common pods would pay on the common nodes (r would be 1/32 · 10/8 = 39 per mille).
  ClusterState state;
  DefaultPolicy policy;
  const TaskRequest g2_only = LearnOneRareConfinedPod(&state, &policy, "G2");
  EXPECT_EQ(PlaceOn(state, &policy, Pod(4000, 1, 1000)), 0);
  EXPECT_EQ(policy.reserve_per_mille("G2"), 0);
  Learn(&policy, g2_only, 32);  // now a third of the pods: in the target, and kept room for
  EXPECT_EQ(PlaceOn(state, &policy, Pod(4000, 1, 1000)), 0);
  EXPECT_EQ(policy.reserve_per_mille("G2"), 644);  // 33/64 · 10/8
}

TEST(DefaultPolicyTest, MemoryRangeStopsWhereAMultiGpuPodsHostsChange) {
  // With a reserve for the 8-GPU pods only "g3" hosts, an 8-GPU pod that also fits g2's 384 GiB pays it on g3 and
  // one that does not fit g2 pays nothing: a score on g3 must not be reused across g2's memory.
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("g3").WithCpu(128000).WithMemory(786432).WithGpus(8, "G3", 16384).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("g2").WithCpu(96000).WithMemory(393216).WithGpus(8, "G2", 16384).Build()).ok());
  DefaultPolicy policy;
  Learn(&policy, Pod(12000, 1, 1000), 15);
  Learn(&policy, Pod(120000, 8, 1000), 1);
  int64_t lo = 0, hi = 0;
  policy.MemoryRange(state, 0, Pod(64000, 8, 1000, 300000), &lo, &hi);
  EXPECT_LE(lo, 300000);
  EXPECT_EQ(hi, 393216);
  policy.MemoryRange(state, 0, Pod(64000, 8, 1000, 500000), &lo, &hi);
  EXPECT_EQ(lo, 393217);
  EXPECT_GE(hi, 500000);
}

TEST(DefaultPolicyTest, NothingIsReservedForPodsThatMayUseEveryModel) {
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("t4").WithCpu(96000).WithGpus(4, "T4", 16384).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("g2").WithCpu(96000).WithGpus(8, "G2", 16384).Build()).ok());
  TaskRequest either = Pod(4000, 1, 1000);
  either.type_include = {"G2", "T4"};
  DefaultPolicy policy;
  Learn(&policy, Pod(4000, 1, 1000), 8);
  Learn(&policy, either, 8);
  EXPECT_EQ(PlaceOn(state, &policy, Pod(4000, 1, 1000)), 0);  // the tie-break's node, as without step 7
  EXPECT_EQ(policy.reserve_per_mille("T4"), 0);
  EXPECT_EQ(policy.reserve_per_mille("G2"), 0);
}

TEST(DefaultPolicyTest, SharingPodTakesTheDeviceThatKeepsWholeHoles) {
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("a").WithCpu(96000).WithGpus(2, "G2", 16384).Build()).ok());
  Allocation used;
  used.node = 0;
  used.devices = {DeviceGrant{0, 0, 600}};
  ASSERT_TRUE(state.Apply(used).ok());  // GPUs free: [400, 1000]
  DefaultPolicy policy;
  Learn(&policy, Pod(1000, 1, 500), 4);
  Learn(&policy, Pod(1000, 1, 1000), 4);
  std::vector<int> devices;
  // A 400-milli pod fills GPU 0 exactly and keeps GPU 1 whole for both shapes.
  ASSERT_EQ(PlaceOn(state, &policy, Pod(1000, 1, 400), &devices), 0);
  EXPECT_EQ(devices, std::vector<int>{0});
}

TEST(DefaultPolicyTest, MultiGpuPodKeepsWholeNodesForWholeNodePods) {
  // An 8-GPU node half used and an idle one: a 4-GPU pod fills the half-used node, keeping the idle node for
  // the 8-GPU pods of the workload.
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("idle").WithCpu(96000).WithGpus(8, "G2", 16384).Build()).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("half").WithCpu(96000).WithGpus(8, "G2", 16384).Build()).ok());
  Allocation used;
  used.node = 1;
  for (int d = 0; d < 4; ++d) used.devices.push_back(DeviceGrant{d, 0, 1000});
  ASSERT_TRUE(state.Apply(used).ok());
  DefaultPolicy policy;
  Learn(&policy, Pod(8000, 8, 1000), 4);
  Learn(&policy, Pod(4000, 4, 1000), 4);
  std::vector<int> devices;
  ASSERT_EQ(PlaceOn(state, &policy, Pod(4000, 4, 1000), &devices), 1);
  EXPECT_EQ(devices, (std::vector<int>{4, 5, 6, 7}));
}

// MemoryRange: every memory in a request's range (that the node still fits) scores as the request itself, on nodes
// left with different free GPU, CPU and memory; and the ranges do split (memory changes scores here).
TEST(DefaultPolicyTest, MemoryRangeKeepsTheScore) {
  ClusterState state;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(state
                    .AddNode(MakeNode("n" + std::to_string(i))
                                 .WithCpu(96000)
                                 .WithMemory((96 + 64 * i) * 1024)
                                 .WithGpus(8, "G2", 16384)
                                 .Build())
                    .ok());
  }
  for (int i = 4; i < 6; ++i) {  // little CPU: which target shapes still fit after placement depends on it
    ASSERT_TRUE(state
                    .AddNode(MakeNode("n" + std::to_string(i))
                                 .WithCpu(6000 + 4000 * (i - 4))
                                 .WithMemory(160 * 1024)
                                 .WithGpus(8, "G2", 16384)
                                 .Build())
                    .ok());
  }
  for (int i = 1; i < 4; ++i) {  // node 0 idle; the others part used
    Allocation used;
    used.node = i;
    used.cpu_milli = 8000 * i;
    used.memory_mib = 24 * 1024 * i;
    for (int d = 0; d < 2 * i; ++d) used.devices.push_back(DeviceGrant{d, 0, d % 2 == 0 ? 1000 : 300 * i});
    ASSERT_TRUE(state.Apply(used).ok());
  }
  const std::vector<TaskRequest> shapes = {Pod(4000, 1, 1000, 32 * 1024), Pod(2000, 1, 500, 12 * 1024),
                                           Pod(8000, 2, 1000, 60 * 1024), Pod(1000, 1, 250, 6 * 1024)};
  DefaultPolicy policy;
  for (const TaskRequest& r : shapes) Learn(&policy, r, 8);
  for (const TaskRequest& r : shapes) policy.OnPlaced(state, r, Allocation{});
  ASSERT_TRUE(policy.traits().memory_ranges);
  Rng rng(1);
  auto score = [&](int node, const TaskRequest& r, int64_t* out) {
    NodeCandidate candidate;
    NodeVerdict verdict;
    std::vector<int> devices;
    return FitNode(state, node, r, false, &candidate, &verdict) &&
           policy.Score(state, r, candidate, rng, out, &devices);
  };
  int split = 0;
  for (int node = 0; node < state.node_count(); ++node) {
    const int64_t free = state.FreeMemory(node);
    for (const TaskRequest& shape : shapes) {
      for (int64_t memory = 0; memory <= free; memory += 3 * 1024 + 17) {
        TaskRequest r = shape;
        r.memory_mib = memory;
        int64_t expected = 0;
        if (!score(node, r, &expected)) continue;  // more CPU than the node has (n4, n5)
        int64_t lo = -1, hi = -1;
        policy.MemoryRange(state, node, r, &lo, &hi);
        ASSERT_LE(lo, memory);
        ASSERT_GE(hi, memory);
        ASSERT_GE(lo, 0);
        if (lo > 0 || hi < free) ++split;
        for (int64_t m = lo; m <= std::min(hi, free); m += std::max<int64_t>(1, (std::min(hi, free) - lo) / 16)) {
          for (int64_t probe : {m, std::min(hi, free)}) {
            TaskRequest other = shape;
            other.memory_mib = probe;
            int64_t got = 0;
            ASSERT_TRUE(score(node, other, &got));
            ASSERT_EQ(got, expected) << "node " << node << " memory " << memory << " probe " << probe << " range ["
                                     << lo << ", " << hi << "]";
          }
        }
      }
    }
  }
  EXPECT_GT(split, 50);  // memory moves scores here: most ranges are a part of [0, free]
}

}  // namespace
}  // namespace xpool
