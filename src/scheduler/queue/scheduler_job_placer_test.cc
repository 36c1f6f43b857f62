#include "scheduler/queue/scheduler_job_placer.h"

#include <gtest/gtest.h>

#include <vector>

#include "scheduler/queue/internal/test_support.h"
#include "scheduler/queue/scheduling_pass.h"

namespace xpool {
namespace {

using testing_support::GpuRequest;
using testing_support::MakeCluster;
using testing_support::MakeTenant;
using testing_support::Waiting;

constexpr TimeMicros kNow = 1000 * 60 * kMicrosPerSecond;

// The production path: the pass over the scheduler's own placement (best-fit), one replica and a
// gang.
TEST(SchedulerJobPlacerTest, PassPreemptsAndPlacesGangsThroughTheScheduler) {
  ClusterState state = MakeCluster(2, 8);
  auto policy = MakePolicy("best-fit");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  Rng rng(1);
  SchedulerJobPlacer placer(state, **policy, rng);
  std::vector<QueueJob> jobs;
  for (int i = 0; i < 2; ++i) {  // two low jobs fill both nodes
    QueueJob low = Waiting(10 + i, 2, kPriorityLow, 0, GpuRequest(8));
    ASSERT_TRUE(testing_support::StartJob(state, placer, low, kNow - 3600 * kMicrosPerSecond));
    jobs.push_back(low);
  }
  jobs.push_back(Waiting(1, 1, kPriorityHigh, 5, GpuRequest(4), 2));  // a gang of 2 × 4 GPUs
  jobs.push_back(Waiting(2, 1, kPriorityNormal, 6, GpuRequest(4)));   // suspends the other low job
  jobs.push_back(Waiting(3, 1, kPriorityNormal, 7, GpuRequest(16)));  // larger than any node
  std::vector<Tenant> tenants = {MakeTenant(1, "x"), MakeTenant(2, "y")};
  PassResult r = RunSchedulingPass(jobs, tenants, state, placer, kNow);
  ASSERT_EQ(r.decisions.size(), 3u);
  EXPECT_EQ(r.decisions[0].kind, DecisionKind::kPreempt) << r.decisions[0].reason;
  EXPECT_EQ(r.decisions[0].allocations.size(), 2u);
  EXPECT_EQ(r.decisions[0].victims.size(), 1u);  // one 8-GPU victim makes room for the whole gang
  EXPECT_EQ(r.decisions[1].kind, DecisionKind::kPreempt) << r.decisions[1].reason;  // normal > low
  EXPECT_EQ(r.suspensions.size(), 2u);
  EXPECT_EQ(r.decisions[2].kind, DecisionKind::kNeverFits);
  EXPECT_FALSE(r.decisions[2].reason.empty());
  EXPECT_TRUE(state.CheckInvariants().ok());
}

}  // namespace
}  // namespace xpool
