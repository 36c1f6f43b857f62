#include "sim/mig_fill.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xpool::sim {
namespace {

TracePod Pod(const std::string& name, int gpus, int64_t milli, std::vector<std::string> spec = {}) {
  TracePod p;
  p.name = name;
  p.cpu_milli = 1000;
  p.memory_mib = 1024;
  p.num_gpu = gpus;
  p.gpu_milli = milli;
  p.gpu_spec = std::move(spec);
  return p;
}

ClusterState Cluster(int nodes, int gpus, const std::string& model = "G2") {
  std::vector<TraceNode> list;
  for (int i = 0; i < nodes; ++i) list.push_back({"n" + std::to_string(i), 64000, 262144, gpus, model});
  Result<ClusterState> built = BuildCluster(list);
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  return built.ok() ? std::move(*built) : ClusterState();
}

// Every listed pod once, in the seed's order, nothing drawn: tune = the list's share of the capacity.
FillOptions ListOnce(const std::string& policy, uint64_t seed, int tune_percent) {
  FillOptions o;
  o.policy = policy;
  o.seed = seed;
  o.tune_percent = tune_percent;
  o.composition = Composition::kTraceThenSample;
  o.record_placements = true;
  return o;
}

TEST(MigFillTest, APodGetsTheSmallestProfileCoveringItsCompute) {
  // Half a GPU is a 4g.40gb on an A100-80GB (3g is 3/7 < 1/2): a second half finds 3 compute slices left.
  const ClusterState one = Cluster(1, 1);
  const std::vector<TracePod> halves = {Pod("a", 1, 500), Pod("b", 1, 500)};
  Result<FillCurve> mig = RunFill(one, halves, ListOnce("mig", 42, 100));
  ASSERT_TRUE(mig.ok()) << mig.status().ToString();
  EXPECT_EQ(mig->pods_placed, 1);
  EXPECT_EQ(mig->pods_skipped, 1);
  EXPECT_DOUBLE_EQ(mig->allocation_pct.back(), 50.0);
  // The 4g holds 571 milli for a pod that asked 500: 7.1 % of the GPU held beyond the request.
  EXPECT_NEAR(mig->frag_pct.back(), 7.1, 0.05);
  // Shared slices place both on the same cluster.
  Result<FillCurve> shared = RunFill(one, halves, ListOnce("default", 42, 100));
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_EQ(shared->pods_placed, 2);

  // A seventh of a GPU is a 1g.10gb: seven of them fill the GPU, the eighth does not fit.
  std::vector<TracePod> sevenths;
  for (int i = 0; i < 8; ++i) sevenths.push_back(Pod("s" + std::to_string(i), 1, 125));
  mig = RunFill(one, sevenths, ListOnce("mig", 42, 100));
  ASSERT_TRUE(mig.ok()) << mig.status().ToString();
  EXPECT_EQ(mig->pods_placed, 7);
  EXPECT_EQ(mig->pods_skipped, 1);
}

TEST(MigFillTest, PartitionedGpusFillBeforeWholeOnesAreCut) {
  // Two quarter-GPU pods and a whole-GPU pod on a node of two GPUs: whatever the order, the quarters share one GPU
  // (2g.20gb each) and the whole pod gets the other.
  const ClusterState node = Cluster(1, 2);
  const std::vector<TracePod> pods = {Pod("quarter-1", 1, 250), Pod("quarter-2", 1, 250), Pod("whole", 1, 1000)};
  bool whole_came_last = false;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    Result<FillCurve> mig = RunFill(node, pods, ListOnce("mig", seed, 75));
    ASSERT_TRUE(mig.ok()) << mig.status().ToString();
    ASSERT_EQ(mig->placements.size(), 3u);
    whole_came_last |= mig->placements.back().pod == "whole";
    EXPECT_EQ(mig->pods_placed, 3);
    for (const FillPlacement& p : mig->placements) EXPECT_EQ(p.node, "n0");
  }
  EXPECT_TRUE(whole_came_last) << "no seed put the whole-GPU pod after both quarters";
}

TEST(MigFillTest, GpuSpecMatchesTheNodeListsModelAndMultiGpuPodsStayOnOneNode) {
  const ClusterState t4 = Cluster(2, 2, "T4");
  Result<FillCurve> mig =
      RunFill(t4, {Pod("v100-only", 1, 500, {"V100"}), Pod("t4", 1, 500, {"T4"})}, ListOnce("mig", 42, 25));
  ASSERT_TRUE(mig.ok()) << mig.status().ToString();
  EXPECT_EQ(mig->pods_placed, 1);
  // Three whole GPUs do not fit on nodes of two, though the cluster has four.
  mig = RunFill(t4, {Pod("three", 3, 1000)}, ListOnce("mig", 42, 75));
  ASSERT_TRUE(mig.ok()) << mig.status().ToString();
  EXPECT_EQ(mig->pods_placed, 0);
  mig = RunFill(t4, {Pod("two", 2, 1000)}, ListOnce("mig", 42, 50));
  ASSERT_TRUE(mig.ok()) << mig.status().ToString();
  EXPECT_EQ(mig->pods_placed, 1);
}

TEST(MigFillTest, TheModelIsNamedAfterMigAndUnknownOnesAreRefused) {
  Result<const MigModel*> model = MigFillModel("mig");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ((*model)->name, "A100-80GB");
  model = MigFillModel("mig:A30-24GB");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->compute_slices, 4);
  model = MigFillModel("mig:T4");
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("H200-141GB"), std::string::npos) << model.status().ToString();
  EXPECT_FALSE(IsMigFillPolicy("migrate"));
  // Only the fill experiment models MIG: as a placement policy it is refused with the reason.
  Result<std::unique_ptr<PlacementPolicy>> policy = MakeFillPolicy("mig", TargetWorkload());
  EXPECT_EQ(policy.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckFillPolicyName("mig:H100-80GB").ok());
  EXPECT_FALSE(CheckFillPolicyName("mig:T4").ok());
  EXPECT_TRUE(CheckFillPolicyName("default").ok());
}

}  // namespace
}  // namespace xpool::sim
