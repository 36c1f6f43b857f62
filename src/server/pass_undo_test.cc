// UndoPass (server/internal/pass_undo.h) on random clusters and queues (fixed seeds): after a pass with
// placements, gangs, preemption and moves, the state it ran on holds again exactly what it held before.
// (A move, which random queues rarely make, has its own case.)
#include "server/internal/pass_undo.h"

#include <gtest/gtest.h>

#include <random>

#include "scheduler/policy.h"
#include "scheduler/queue/internal/test_support.h"
#include "scheduler/queue/scheduler_job_placer.h"

namespace xpool::server::internal {
namespace {

using testing_support::GpuRequest;
using testing_support::MakeCluster;
using testing_support::MakeTenant;
using testing_support::StartJob;
using testing_support::Waiting;

constexpr TimeMicros kNow = 1'000'000 * kMicrosPerSecond;

// A request of 1..4 whole GPUs, or one shared GPU at 250..750 milli.
TaskRequest RandomRequest(std::mt19937_64& gen) {
  if (gen() % 3 == 0) return GpuRequest(1, 250 + static_cast<int64_t>(gen() % 3) * 250);
  return GpuRequest(1 + static_cast<int>(gen() % 4));
}

TEST(PassUndoTest, TheStateHoldsWhatItHeldBeforeThePass) {
  const int priorities[] = {10, 50, 90};
  const MoveRule moves[] = {MoveRule::kOff, MoveRule::kLowerPriority, MoveRule::kAnyPriority};
  int placed = 0, preempting = 0, suspended = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 gen(seed);
    ClusterState state = MakeCluster(4, 8);
    auto policy = MakePolicy(seed % 2 ? "default" : "best-fit");
    ASSERT_TRUE(policy.ok());
    Rng rng(seed);
    SchedulerJobPlacer placer(state, **policy, rng);
    std::vector<QueueJob> jobs;
    int64_t id = 0;
    for (int i = 0, n = static_cast<int>(gen() % 14); i < n; ++i) {
      QueueJob j = Waiting(++id, 1 + static_cast<int64_t>(gen() % 3), priorities[gen() % 3], 0, RandomRequest(gen));
      if (StartJob(state, placer, j, kNow - 7200 * kMicrosPerSecond)) jobs.push_back(std::move(j));
    }
    for (int i = 0, n = 3 + static_cast<int>(gen() % 15); i < n; ++i) {
      const int replicas = gen() % 5 == 0 ? 2 : 1;
      jobs.push_back(Waiting(++id, 1 + static_cast<int64_t>(gen() % 3), priorities[gen() % 3],
                             static_cast<TimeMicros>(i), RandomRequest(gen), replicas));
    }
    PassOptions options;
    options.moves = moves[seed % 3];
    options.rules.min_runtime = 0;
    const ClusterState before = state;
    PassResult result = RunSchedulingPass(jobs, {MakeTenant(1, "x", 8000), MakeTenant(2, "y"), MakeTenant(3, "z")},
                                          state, placer, kNow, options);
    if (result.stats.placed > 0 && result.stats.suspended == 0) {  // only added: the state shows it
      EXPECT_GE(FirstUsageDifference(before, state), 0) << "the pass left its placements in the state";
    }
    UndoPass(state, jobs, result);
    EXPECT_EQ(FirstUsageDifference(before, state), -1);
    EXPECT_TRUE(state.CheckInvariants().ok());
    placed += result.stats.placed;
    preempting += result.stats.preempting;
    suspended += result.stats.suspended;
  }
  // The seeds cover placements and preemption (moves: below).
  EXPECT_GT(placed, 0);
  EXPECT_GT(preempting, 0);
  EXPECT_GT(suspended, 0);
}

// One GPU taken on each of two 8-GPU nodes; an 8-GPU job fits only once one of them moves to the other node.
TEST(PassUndoTest, AMoveIsTakenBackToo) {
  ClusterState state = MakeCluster(2, 8);
  auto policy = MakePolicy("best-fit");
  ASSERT_TRUE(policy.ok());
  Rng rng(7);
  SchedulerJobPlacer placer(state, **policy, rng);
  std::vector<QueueJob> jobs;
  for (int node = 0; node < 2; ++node) {
    QueueJob j = Waiting(node + 1, 2, 10, 0, GpuRequest(1));
    Allocation a;
    a.node = node;
    a.cpu_milli = j.request.cpu_milli;
    a.memory_mib = j.request.memory_mib;
    a.devices.push_back({0, state.node(node).devices[0].memory_mib, 1000});
    ASSERT_TRUE(state.Apply(a).ok());
    j.allocations = {a};
    j.state = QueueJobState::kRunning;
    j.last_start = kNow - 7200 * kMicrosPerSecond;
    jobs.push_back(std::move(j));
  }
  jobs.push_back(Waiting(3, 1, 90, 0, GpuRequest(8)));
  PassOptions options;
  options.moves = MoveRule::kLowerPriority;
  options.rules.min_runtime = 0;
  const ClusterState before = state;
  PassResult result = RunSchedulingPass(jobs, {MakeTenant(1, "x"), MakeTenant(2, "y")}, state, placer, kNow, options);
  ASSERT_EQ(result.stats.moved, 1);
  ASSERT_EQ(result.suspensions.size(), 1u);
  EXPECT_FALSE(result.suspensions[0].move_to.empty());
  UndoPass(state, jobs, result);
  EXPECT_EQ(FirstUsageDifference(before, state), -1);
  EXPECT_TRUE(state.CheckInvariants().ok());
}

}  // namespace
}  // namespace xpool::server::internal
