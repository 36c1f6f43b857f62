// Tests of the FGD paper's policies (random, dot-product, gpu-packing, gpu-clustering, fgd) through Score,
// on nodes whose expected scores were computed by hand.
#include <gtest/gtest.h>

#include "model/node_builder.h"
#include "scheduler/policy/dot_product.h"
#include "scheduler/policy/fgd.h"
#include "scheduler/policy/gpu_clustering.h"
#include "scheduler/policy/gpu_packing.h"
#include "scheduler/policy/random.h"

namespace xpool {
namespace {

TaskRequest Gpu(int64_t cpu, int count, int64_t milli) {
  TaskRequest r;
  r.cpu_milli = cpu;
  r.device_count = count;
  r.device_compute_milli = milli;
  return r;
}

void Use(ClusterState* state, int node, int device, int64_t milli) {
  Allocation a;
  a.node = node;
  a.devices = {DeviceGrant{device, 0, milli}};
  ASSERT_TRUE(state->Apply(a).ok());
}

NodeCandidate All(const ClusterState& state, int node, const TaskRequest& r) {
  NodeCandidate c;
  c.node = node;
  for (int d = 0; d < static_cast<int>(state.node(node).devices.size()); ++d) {
    if (state.FreeDeviceCompute(node, d) >= r.device_compute_milli) c.fitting_devices.push_back(d);
  }
  return c;
}

// A target workload of one shape: 1 CPU, one device at 500 milli.
TargetWorkload HalfGpuTarget() {
  PodShape s;
  s.cpu_milli = 1000;
  s.gpu_count = 1;
  s.gpu_milli = 500;
  return TargetWorkload::FromCounts({{s, 1}}, 100);
}

class PaperPoliciesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(state_.AddNode(MakeNode("a").WithCpu(32000).WithGpus(2, "G2", 16384).Build()).ok());
    ASSERT_TRUE(state_.AddNode(MakeNode("b").WithCpu(32000).WithGpus(8, "G2", 16384).Build()).ok());
  }
  ClusterState state_;
  Rng rng_{7};
  int64_t score_ = 0;
  std::vector<int> devices_;
};

TEST_F(PaperPoliciesTest, FgdPicksTheDeviceThatReducesFragmentation) {
  Use(&state_, 0, 0, 600);  // node a: GPUs free [400, 1000]
  FgdPolicy fgd(HalfGpuTarget());
  const TaskRequest r = Gpu(1000, 1, 400);
  // Before: the 500-shape fits on GPU 1, GPU 0 (400) is fragment: F = 400. On GPU 0 → [0, 1000]: F = 0,
  // Δ = 400, score ⌊100·sigmoid(0.4)⌋ = 59. On GPU 1 → [400, 600]: F = 400, Δ = 0, score 50.
  ASSERT_TRUE(fgd.Score(state_, r, All(state_, 0, r), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 59);
  EXPECT_EQ(devices_, std::vector<int>{0});
  EXPECT_EQ(fgd.tie_break(), TieBreak::kLast);
  // Cached while the node is unchanged; recomputed after it changes.
  ASSERT_TRUE(fgd.Score(state_, r, All(state_, 0, r), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 59);
  Use(&state_, 0, 1, 600);  // now [400, 400]: the 500-shape fits nowhere, F = 800 before and 400 after
  ASSERT_TRUE(fgd.Score(state_, r, All(state_, 0, r), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 59);
}

TEST_F(PaperPoliciesTest, FgdScoreCacheDoesNotFollowACopiedState) {
  // Two copies of one cluster, each changed once on node a: the same generation, different contents (as the
  // server's per-pass scratch copies). A score cached on one must not be read for the other.
  FgdPolicy fgd(HalfGpuTarget());
  const TaskRequest r = Gpu(1000, 1, 400);
  ClusterState first = state_;
  Use(&first, 0, 0, 600);  // [400, 1000]: Δ = 400 on GPU 0, score 59 (as above)
  ClusterState second = state_;
  Use(&second, 0, 0, 100);  // [900, 1000]: the 500-shape fits either way, Δ = 0, score 50
  ASSERT_EQ(first.generation(0), second.generation(0));
  ASSERT_TRUE(fgd.Score(first, r, All(first, 0, r), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 59);
  ASSERT_TRUE(fgd.Score(second, r, All(second, 0, r), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 50);
  FgdPolicy fresh(HalfGpuTarget());
  int64_t fresh_score = 0;
  std::vector<int> fresh_devices;
  ASSERT_TRUE(fresh.Score(second, r, All(second, 0, r), rng_, &fresh_score, &fresh_devices));
  EXPECT_EQ(score_, fresh_score);
  EXPECT_EQ(devices_, fresh_devices);
}

// ScoreBound bounds every request's score on the node, and a policy that memoised measures over many calls scores
// as a fresh one: random usage on the two nodes, requests of several shapes.
TEST_F(PaperPoliciesTest, FgdScoreBoundAndMemoisedScoresHold) {
  PodShape whole{2000, 1, 1000, {}, {}, {}};
  PodShape half{1000, 1, 500, {}, {}, {}};
  PodShape pair{4000, 2, 1000, {}, {}, {}};
  const TargetWorkload target = TargetWorkload::FromCounts({{whole, 3}, {half, 5}, {pair, 1}}, 100);
  FgdPolicy cached(target);
  Rng rng(11);
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int checked = 0, below = 0;
  for (int step = 0; step < 400; ++step) {
    const int node = pick(0, 1);
    const int devices = static_cast<int>(state_.node(node).devices.size());
    Allocation a;
    a.node = node;
    a.cpu_milli = 1000 * pick(0, 3);
    a.devices = {DeviceGrant{pick(0, devices - 1), 0, 50 * pick(1, 20)}};
    if (!state_.Apply(a).ok() || pick(0, 3) == 0) {  // keep the nodes from filling up for good
      ClusterState empty;
      ASSERT_TRUE(empty.AddNode(state_.node(0)).ok());
      ASSERT_TRUE(empty.AddNode(state_.node(1)).ok());
      state_ = empty;
    }
    const int64_t bound = cached.ScoreBound(state_, node);
    ASSERT_NE(bound, kNoScoreBound);
    const TaskRequest r = Gpu(1000 * pick(0, 4), pick(0, 3) == 0 ? 2 : 1, pick(0, 1) == 0 ? 1000 : 50 * pick(1, 19));
    NodeCandidate c = All(state_, node, r);
    if (static_cast<int>(c.fitting_devices.size()) < r.device_count || state_.FreeCpu(node) < r.cpu_milli) continue;
    int64_t s1 = 0, s2 = 0;
    std::vector<int> d1, d2;
    ASSERT_TRUE(cached.Score(state_, r, c, rng_, &s1, &d1));
    FgdPolicy uncached(target);
    ASSERT_TRUE(uncached.Score(state_, r, c, rng_, &s2, &d2));
    EXPECT_EQ(s1, s2) << step;
    EXPECT_EQ(d1, d2) << step;
    EXPECT_LE(s1, bound) << step;
    below += s1 < bound ? 1 : 0;
    ++checked;
  }
  EXPECT_GT(checked, 100);
  EXPECT_GT(below, 10);  // the bound is not the score itself
}

TEST_F(PaperPoliciesTest, FgdLearnsTheTargetFromArrivals) {
  FgdPolicy fgd;
  EXPECT_TRUE(fgd.target().empty());
  for (int i = 0; i < 4; ++i) fgd.OnArrival(Gpu(1000, 1, 500));
  ASSERT_EQ(fgd.target().shapes().size(), 1u);
  EXPECT_EQ(fgd.target().shapes()[0].shape.gpu_milli, 500);
}

TEST_F(PaperPoliciesTest, GpuPackingBands) {
  GpuPackingPolicy p;
  const TaskRequest share = Gpu(1000, 1, 300);
  // Idle 8-GPU node: max(33 − 8, 8) = 25.
  ASSERT_TRUE(p.Score(state_, share, All(state_, 1, share), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 25);
  // Node a with GPU 0 half used: the 300 pod fits on it: 100 − 50/10 = 95, device 0.
  Use(&state_, 0, 0, 500);
  ASSERT_TRUE(p.Score(state_, share, All(state_, 0, share), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 95);
  EXPECT_EQ(devices_, std::vector<int>{0});
  // A 600 pod needs the fully free GPU 1 on a used node: 50 − 1 = 49.
  const TaskRequest big = Gpu(1000, 1, 600);
  ASSERT_TRUE(p.Score(state_, big, All(state_, 0, big), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 49);
  EXPECT_EQ(devices_, std::vector<int>{1});
  // CPU-only: 0.
  ASSERT_TRUE(p.Score(state_, Gpu(1000, 0, 0), All(state_, 0, Gpu(1000, 0, 0)), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 0);
}

TEST_F(PaperPoliciesTest, GpuClusteringBands) {
  GpuClusteringPolicy p;
  const TaskRequest half = Gpu(1000, 1, 500);
  Allocation a;
  a.node = 0;
  a.devices = {DeviceGrant{0, 0, 500}};
  ASSERT_TRUE(state_.Apply(a).ok());
  p.OnPlaced(state_, half, a);
  // Node a runs only 500-share pods: 75 + 25·(8000 − 1500)/8000 = 75 + 20 = 95.
  ASSERT_TRUE(p.Score(state_, half, All(state_, 0, half), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 95);
  // Idle node b: 25 + 25·0/8000 = 25.
  ASSERT_TRUE(p.Score(state_, half, All(state_, 1, half), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 25);
  // Another sharing pod (any share) is the same class: 95 too. A whole-GPU pod is another class: 0 + 20.
  const TaskRequest small = Gpu(1000, 1, 300);
  ASSERT_TRUE(p.Score(state_, small, All(state_, 0, small), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 95);
  const TaskRequest other = Gpu(1000, 1, 1000);
  ASSERT_TRUE(p.Score(state_, other, All(state_, 0, other), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 20);
}

TEST_F(PaperPoliciesTest, DotProductPrefersTheLeastAlignedLeftover) {
  DotProductPolicy p;
  const TaskRequest r = Gpu(32000, 1, 1000);  // all of a node's CPU, one whole GPU
  Use(&state_, 1, 3, 400);
  // Largest node: 32 CPUs, 8 GPUs. Node a: (32000/32000)·(32000/32000) + (2000/8000)·(1000/8000) = 1.03125,
  // score ⌊100·(1 − 1.03125/2)⌋ = 48. Node b: 1 + (7600/8000)·(1000/8000) = 1.11875 → ⌊44.06⌋ = 44.
  ASSERT_TRUE(p.Score(state_, r, All(state_, 0, r), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 48);
  EXPECT_EQ(devices_, std::vector<int>{0});
  ASSERT_TRUE(p.Score(state_, r, All(state_, 1, r), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 44);
  EXPECT_EQ(devices_, std::vector<int>{0});  // the first idle device
}

TEST_F(PaperPoliciesTest, DotProductMergesTheNodesFreeGpuIntoOneDimension) {
  DotProductPolicy p;
  const TaskRequest share = Gpu(0, 1, 500);
  // The published runs use `dimExtMethod: merge`: the GPU dimension is the node's whole free GPU compute.
  // Node a, 2 idle GPUs: 2000/8000 · 500/8000 = 0.015625 → ⌊100·(1 − 0.0078)⌋ = 99, on the first GPU.
  ASSERT_TRUE(p.Score(state_, share, All(state_, 0, share), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 99);
  EXPECT_EQ(devices_, std::vector<int>{0});
  // Node b, 8 idle GPUs: 8000/8000 · 500/8000 = 0.0625 → ⌊96.875⌋ = 96.
  ASSERT_TRUE(p.Score(state_, share, All(state_, 1, share), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 96);
  EXPECT_EQ(devices_, std::vector<int>{0});
  // Node b with device 3 at 600 free: 7600/8000 · 500/8000 = 0.059375 → ⌊97.03⌋ = 97 (the `share` variant
  // scored device 3 alone: 600/8000 · 500/8000 → 99); the device is the tightest that fits, device 3.
  Use(&state_, 1, 3, 400);
  ASSERT_TRUE(p.Score(state_, share, All(state_, 1, share), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 97);
  EXPECT_EQ(devices_, std::vector<int>{3});
  // Device 3 at 300 free no longer fits the 500 pod but still counts in the node's free GPU:
  // 7300/8000 · 500/8000 = 0.05703 → ⌊97.15⌋ = 97, on the first idle device.
  Use(&state_, 1, 3, 300);
  ASSERT_TRUE(p.Score(state_, share, All(state_, 1, share), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 97);
  EXPECT_EQ(devices_, std::vector<int>{0});
  // A CPU-only pod has no GPU term: 32000/32000 · 16000/32000 = 0.5 → ⌊75⌋.
  const TaskRequest cpu = Gpu(16000, 0, 0);
  ASSERT_TRUE(p.Score(state_, cpu, All(state_, 1, cpu), rng_, &score_, &devices_));
  EXPECT_EQ(score_, 75);
}

TEST_F(PaperPoliciesTest, RandomScoresEquallyAndPicksAFittingDevice) {
  RandomPolicy p;
  EXPECT_EQ(p.tie_break(), TieBreak::kRandom);
  const TaskRequest r = Gpu(1000, 1, 500);
  Use(&state_, 1, 0, 700);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(p.Score(state_, r, All(state_, 1, r), rng_, &score_, &devices_));
    EXPECT_EQ(score_, 0);
    ASSERT_EQ(devices_.size(), 1u);
    EXPECT_NE(devices_[0], 0);  // device 0 has only 300 free
  }
}

}  // namespace
}  // namespace xpool
