#include "scheduler/gang.h"

#include <gtest/gtest.h>

#include "model/node_builder.h"
#include "scheduler/policy/best_fit.h"

namespace xpool {
namespace {

TaskRequest Whole(int n) {
  TaskRequest r;
  r.cpu_milli = 1000;
  r.device_count = n;
  r.device_compute_milli = 1000;
  return r;
}

ClusterState TwoFourGpuNodes() {
  ClusterState s;
  EXPECT_TRUE(s.AddNode(MakeNode("a").WithGpus(4, "A100", 40960).Build()).ok());
  EXPECT_TRUE(s.AddNode(MakeNode("b").WithGpus(4, "A100", 40960).Build()).ok());
  return s;
}

TEST(GangTest, PlacesAllReplicasAndLeavesTheStateUntouched) {
  ClusterState s = TwoFourGpuNodes();
  BestFitPolicy policy;
  Rng rng(1);
  GangOutcome g = PlanGang(s, {Whole(4), Whole(2), Whole(2)}, policy, rng);
  ASSERT_EQ(g.kind, OutcomeKind::kPlaced) << g.reason;
  ASSERT_EQ(g.allocations.size(), 3u);
  EXPECT_EQ(s.totals().device_compute_allocated_milli, 0);  // nothing committed
  for (const Allocation& a : g.allocations) ASSERT_TRUE(s.Apply(a).ok());
  EXPECT_EQ(s.totals().device_compute_allocated_milli, 8000);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(GangTest, AllOrNothing) {
  ClusterState s = TwoFourGpuNodes();
  BestFitPolicy policy;
  Rng rng(1);
  GangOutcome g = PlanGang(s, {Whole(4), Whole(4), Whole(1)}, policy, rng);
  EXPECT_EQ(g.kind, OutcomeKind::kWait);
  EXPECT_EQ(g.failed_replica, 2);
  EXPECT_TRUE(g.allocations.empty());
  EXPECT_EQ(g.reason.rfind("replica 3 of 3: ", 0), 0u) << g.reason;
  EXPECT_EQ(s.totals().device_compute_allocated_milli, 0);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(GangTest, NeverFitsReplica) {
  ClusterState s = TwoFourGpuNodes();
  BestFitPolicy policy;
  Rng rng(1);
  GangOutcome g = PlanGang(s, {Whole(1), Whole(5)}, policy, rng);
  EXPECT_EQ(g.kind, OutcomeKind::kNeverFits);
  EXPECT_EQ(g.failed_replica, 1);
  EXPECT_EQ(PlanGang(s, {}, policy, rng).kind, OutcomeKind::kNeverFits);
}

}  // namespace
}  // namespace xpool
