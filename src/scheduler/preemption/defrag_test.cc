#include "scheduler/preemption/defrag.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/node_builder.h"
#include "scheduler/queue/internal/test_support.h"
#include "scheduler/queue/scheduling_pass.h"

namespace xpool {
namespace {

using testing_support::FirstFitPlacer;
using testing_support::GpuRequest;
using testing_support::MakeTenant;
using testing_support::StartJob;
using testing_support::Waiting;

constexpr TimeMicros kMinute = 60 * kMicrosPerSecond;
constexpr TimeMicros kNow = 1000 * kMinute;

// Nodes of the given GPU counts (80 GiB GPUs, 64 cores, 256 GiB), named n0, n1, ...
ClusterState Cluster(const std::vector<int>& gpus) {
  ClusterState s;
  for (size_t i = 0; i < gpus.size(); ++i) {
    (void)s.AddNode(MakeNode("n" + std::to_string(i)).WithGpus(gpus[i], "A100", 81920).Build());
  }
  return s;
}

struct Scenario {
  ClusterState state;
  FirstFitPlacer placer;
  std::vector<QueueJob> jobs;
  explicit Scenario(const std::vector<int>& gpus) : state(Cluster(gpus)) {}
  // Runs `j` (whole GPUs) on `node`, on its first idle devices.
  void RunningOn(QueueJob j, int node, TimeMicros ran_for) {
    Allocation a;
    a.node = node;
    a.cpu_milli = j.request.cpu_milli;
    a.memory_mib = j.request.memory_mib;
    const Node& n = state.node(node);
    for (int d = 0;
         d < static_cast<int>(n.devices.size()) && static_cast<int>(a.devices.size()) < j.request.device_count; ++d) {
      if (state.usage(node).devices[d].sharers == 0) a.devices.push_back({d, n.devices[d].memory_mib, 1000});
    }
    ASSERT_TRUE(state.Apply(a).ok());
    j.allocations = {a};
    j.state = QueueJobState::kRunning;
    j.last_start = kNow - ran_for;
    jobs.push_back(std::move(j));
  }
  std::vector<int> AllRunning() const {
    std::vector<int> out;
    for (int i = 0; i < static_cast<int>(jobs.size()); ++i) {
      if (jobs[i].state == QueueJobState::kRunning) out.push_back(i);
    }
    return out;
  }
};

// An 8-GPU node holds one 1-GPU job; a 2-GPU node is empty: moving the small job opens the big node.
TEST(PlanMovesTest, MovesASmallJobToOpenAWholeNode) {
  Scenario s({8, 2});
  s.RunningOn(Waiting(10, 1, 90, 0, GpuRequest(1)), 0, 60 * kMinute);
  const QueueJob big = Waiting(1, 1, 50, 5, GpuRequest(8));
  const ClusterState before = s.state;
  Result<MovePlan> plan = PlanMoves(s.state, s.jobs, s.AllRunning(), big, s.placer);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->found);
  EXPECT_EQ(plan->node, 0);
  EXPECT_EQ(plan->moved, std::vector<int>{0});
  ASSERT_EQ(plan->move_to.size(), 1u);
  EXPECT_EQ(plan->move_to[0][0].node, 1);
  EXPECT_EQ(plan->moved_gpu_milli, 1000);
  EXPECT_EQ(s.state.totals().device_compute_allocated_milli, before.totals().device_compute_allocated_milli);
  EXPECT_EQ(s.state.usage(0).cpu_milli, before.usage(0).cpu_milli);  // left as found
}

// Node 0 holds three small jobs, node 1 one: node 1 is opened (fewest moves), its job going to node 2.
TEST(PlanMovesTest, PrefersTheNodeNeedingFewestMoves) {
  Scenario s({8, 8, 4});
  for (int i = 0; i < 3; ++i) s.RunningOn(Waiting(10 + i, 1, 90, 0, GpuRequest(1)), 0, 60 * kMinute);
  s.RunningOn(Waiting(20, 1, 90, 0, GpuRequest(2)), 1, 60 * kMinute);
  Result<MovePlan> plan = PlanMoves(s.state, s.jobs, s.AllRunning(), Waiting(1, 1, 50, 5, GpuRequest(8)), s.placer);
  ASSERT_TRUE(plan.ok() && plan->found);
  EXPECT_EQ(plan->node, 1);
  EXPECT_EQ(plan->moved, std::vector<int>{3});
}

// Only what is needed moves: the job needs 6 of 8 GPUs and three 1-GPU jobs leave 5 free: exactly one moves,
// the one that started last (least work lost).
TEST(PlanMovesTest, MovesNoMoreThanNeeded) {
  Scenario s({8, 2});
  for (int i = 0; i < 3; ++i) s.RunningOn(Waiting(10 + i, 1, 90, 0, GpuRequest(1)), 0, (60 + i) * kMinute);
  Result<MovePlan> plan = PlanMoves(s.state, s.jobs, s.AllRunning(), Waiting(1, 1, 50, 5, GpuRequest(6)), s.placer);
  ASSERT_TRUE(plan.ok() && plan->found);
  ASSERT_EQ(plan->moved.size(), 1u);
  EXPECT_EQ(s.jobs[plan->moved[0]].id, JobId(10));  // least work lost: the most recently started
}

// Nowhere to move to (the other node is full with unmovable work): no plan, state unchanged.
TEST(PlanMovesTest, NoPlanWithoutRoomElsewhere) {
  Scenario s({8, 2});
  s.RunningOn(Waiting(10, 1, 90, 0, GpuRequest(1)), 0, 60 * kMinute);
  s.RunningOn(Waiting(11, 1, 90, 0, GpuRequest(2)), 1, 60 * kMinute);
  const int64_t held = s.state.totals().device_compute_allocated_milli;
  Result<MovePlan> plan = PlanMoves(s.state, s.jobs, {0}, Waiting(1, 1, 50, 5, GpuRequest(8)), s.placer);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->found);
  EXPECT_EQ(s.state.totals().device_compute_allocated_milli, held);
  EXPECT_TRUE(s.state.CheckInvariants().ok());
  // A gang is left to preemption.
  Scenario g({8, 2});
  g.RunningOn(Waiting(10, 1, 90, 0, GpuRequest(1)), 0, 60 * kMinute);
  Result<MovePlan> gang = PlanMoves(g.state, g.jobs, {0}, Waiting(1, 1, 50, 5, GpuRequest(4), 2), g.placer);
  ASSERT_TRUE(gang.ok());
  EXPECT_FALSE(gang->found);
}

// Through the pass: moves are off by default; kLowerPriority may not move the LS job for a Burstable one;
// kAnyPriority moves it (a kPreempt decision whose victim carries move_to) unless it is younger than min-runtime.
TEST(PlanMovesTest, PassMovesByItsRule) {
  std::vector<Tenant> tenants = {MakeTenant(1, "t")};
  auto run = [&](MoveRule rule, TimeMicros ran_for, Scenario* out) {
    Scenario s({8, 2});
    s.RunningOn(Waiting(10, 1, 90, 0, GpuRequest(1)), 0, ran_for);
    s.jobs.push_back(Waiting(1, 1, 50, 5, GpuRequest(8)));
    PassOptions o;
    o.moves = rule;
    PassResult r = RunSchedulingPass(s.jobs, tenants, s.state, s.placer, kNow, o);
    *out = std::move(s);
    return r;
  };
  Scenario s({});
  EXPECT_EQ(run(MoveRule::kOff, 60 * kMinute, &s).decisions[0].kind, DecisionKind::kWait);
  EXPECT_EQ(run(MoveRule::kLowerPriority, 60 * kMinute, &s).decisions[0].kind, DecisionKind::kWait);
  EXPECT_EQ(run(MoveRule::kAnyPriority, 5 * kMinute, &s).decisions[0].kind, DecisionKind::kWait);  // too young
  PassResult r = run(MoveRule::kAnyPriority, 60 * kMinute, &s);
  const JobDecision& d = r.decisions[0];
  ASSERT_EQ(d.kind, DecisionKind::kPreempt) << d.reason;
  EXPECT_EQ(d.reason, "moves job 10 (tenant t, priority 90) from node n0 to node n1 to open node n0");
  EXPECT_EQ(d.victims, std::vector<int>{0});
  ASSERT_EQ(r.suspensions.size(), 1u);
  EXPECT_EQ(r.suspensions[0].reason, "moved from node n0 to node n1 to make room for job 1 (tenant t, priority 50)");
  ASSERT_EQ(r.suspensions[0].move_to.size(), 1u);
  EXPECT_EQ(r.suspensions[0].move_to[0].node, 1);
  EXPECT_EQ(r.stats.moved, 1);
  // The returned state: the big job on n0, the moved one on n1.
  EXPECT_EQ(s.state.totals().device_compute_allocated_milli, 9000);
  EXPECT_EQ(s.state.usage(0).devices[7].compute_milli, 1000);
  EXPECT_EQ(s.state.usage(1).devices[0].compute_milli, 1000);
  EXPECT_TRUE(s.state.CheckInvariants().ok());
}

// The 8-GPU node holds an LS job (priority 90) and a BE job (priority 10); the 2-GPU node has room for one
// 1-GPU job. Moving alone cannot open the big node (no room for both), nor can preemption alone (the LS job may
// not be suspended for a priority-50 job): together they can — the LS job moves, the BE job is suspended.
TEST(PlanMovesTest, SuspendsALowerPriorityJobThatFindsNoRoom) {
  Scenario s({8, 2});
  s.RunningOn(Waiting(10, 1, 90, 0, GpuRequest(1)), 0, 60 * kMinute);
  s.RunningOn(Waiting(11, 1, 10, 0, GpuRequest(1)), 0, 60 * kMinute);
  s.RunningOn(Waiting(12, 1, 90, 0, GpuRequest(1)), 1, 60 * kMinute);
  const QueueJob big = Waiting(1, 1, 50, 5, GpuRequest(8));
  const ClusterState before = s.state;
  Result<MovePlan> moves_only = PlanMoves(s.state, s.jobs, {0, 1}, big, s.placer);
  ASSERT_TRUE(moves_only.ok());
  EXPECT_FALSE(moves_only->found);
  EXPECT_EQ(moves_only->candidates, 1);
  EXPECT_EQ(moves_only->misses.no_room_whole, 1);
  EXPECT_EQ(moves_only->misses.total(), 1);
  Result<MovePlan> plan = PlanMoves(s.state, s.jobs, {0, 1}, big, s.placer, 8, /*suspendable=*/{1});
  ASSERT_TRUE(plan.ok() && plan->found);
  EXPECT_EQ(plan->node, 0);
  EXPECT_EQ(plan->moved, std::vector<int>{0});  // the LS job finds room first
  ASSERT_EQ(plan->move_to.size(), 1u);
  EXPECT_EQ(plan->move_to[0][0].node, 1);
  EXPECT_EQ(plan->suspended, std::vector<int>{1});
  EXPECT_EQ(s.state.totals().device_compute_allocated_milli, before.totals().device_compute_allocated_milli);
  EXPECT_TRUE(s.state.CheckInvariants().ok());
  // A suspendable job that does find room moves rather than waits.
  Scenario r({8, 4});
  r.RunningOn(Waiting(10, 1, 90, 0, GpuRequest(1)), 0, 60 * kMinute);
  r.RunningOn(Waiting(11, 1, 10, 0, GpuRequest(1)), 0, 60 * kMinute);
  Result<MovePlan> roomy = PlanMoves(r.state, r.jobs, {0, 1}, big, r.placer, 8, {1});
  ASSERT_TRUE(roomy.ok() && roomy->found);
  EXPECT_EQ(roomy->moved.size(), 2u);
  EXPECT_TRUE(roomy->suspended.empty());
}

// A second hop: the 2-GPU job on the big node has no 2-GPU hole anywhere (1 GPU free on each small node), but once
// the 1-GPU job on node 1 moves to node 2, it fits on node 1.
TEST(PlanMovesTest, SecondHopMakesRoomForAMovedJob) {
  Scenario s({8, 2, 1});
  s.RunningOn(Waiting(10, 1, 90, 0, GpuRequest(2)), 0, 60 * kMinute);
  s.RunningOn(Waiting(11, 1, 90, 0, GpuRequest(1)), 1, 60 * kMinute);
  const QueueJob big = Waiting(1, 1, 50, 5, GpuRequest(8));
  const ClusterState before = s.state;
  Result<MovePlan> one_hop = PlanMoves(s.state, s.jobs, {0}, big, s.placer);  // job 11 may not move
  ASSERT_TRUE(one_hop.ok());
  EXPECT_FALSE(one_hop->found);
  EXPECT_EQ(one_hop->misses.no_room_whole, 1);
  Result<MovePlan> plan = PlanMoves(s.state, s.jobs, {0, 1}, big, s.placer);
  ASSERT_TRUE(plan.ok() && plan->found);
  EXPECT_EQ(plan->node, 0);
  EXPECT_EQ(plan->moved, (std::vector<int>{0, 1}));
  ASSERT_EQ(plan->move_to.size(), 2u);
  EXPECT_EQ(plan->move_to[0][0].node, 1);
  EXPECT_EQ(plan->move_to[1][0].node, 2);
  EXPECT_EQ(plan->moved_gpu_milli, 3000);
  EXPECT_TRUE(plan->suspended.empty());
  for (int n = 0; n < 3; ++n) EXPECT_EQ(s.state.usage(n).cpu_milli, before.usage(n).cpu_milli);  // left as found
  EXPECT_EQ(s.state.totals().device_compute_allocated_milli, before.totals().device_compute_allocated_milli);
  EXPECT_TRUE(s.state.CheckInvariants().ok());
}

// A node whose unmovable work keeps the job out is counted as pinned, not as a missing destination.
TEST(PlanMovesTest, CountsPinnedNodes) {
  Scenario s({8, 8});
  s.RunningOn(Waiting(10, 1, 90, 0, GpuRequest(1)), 0, 60 * kMinute);
  s.RunningOn(Waiting(11, 1, 90, 0, GpuRequest(1)), 0, 60 * kMinute);
  s.RunningOn(Waiting(12, 1, 90, 0, GpuRequest(4)), 1, 60 * kMinute);
  s.RunningOn(Waiting(13, 1, 90, 0, GpuRequest(1)), 1, 60 * kMinute);
  // Only job 10 may move: node 0 stays pinned by job 11, node 1 by job 12.
  Result<MovePlan> plan = PlanMoves(s.state, s.jobs, {0, 3}, Waiting(1, 1, 50, 5, GpuRequest(8)), s.placer);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->found);
  EXPECT_EQ(plan->candidates, 2);
  EXPECT_EQ(plan->misses.pinned, 2);
}

// Through the pass: with preemption on, the BE job is suspended (no move_to) and the LS job moves; with
// preemption off the job waits; an equal-priority job is never suspended — it must find room or block the plan.
TEST(PlanMovesTest, PassCombinesMovesAndPreemption) {
  std::vector<Tenant> tenants = {MakeTenant(1, "t")};
  auto run = [&](bool preemption, int other_priority) {
    Scenario s({8, 2});
    s.RunningOn(Waiting(10, 1, 90, 0, GpuRequest(1)), 0, 60 * kMinute);
    s.RunningOn(Waiting(11, 1, other_priority, 0, GpuRequest(1)), 0, 60 * kMinute);
    s.RunningOn(Waiting(12, 1, 90, 0, GpuRequest(1)), 1, 60 * kMinute);
    s.jobs.push_back(Waiting(1, 1, 50, 5, GpuRequest(8)));
    PassOptions o;
    o.moves = MoveRule::kAnyPriority;
    o.preemption = preemption;
    PassResult r = RunSchedulingPass(s.jobs, tenants, s.state, s.placer, kNow, o);
    EXPECT_TRUE(s.state.CheckInvariants().ok());
    return std::make_pair(std::move(r), s.state.totals().device_compute_allocated_milli);
  };
  auto [r, held] = run(true, 10);
  const JobDecision& d = r.decisions[0];
  ASSERT_EQ(d.kind, DecisionKind::kPreempt) << d.reason;
  EXPECT_EQ(d.victims, (std::vector<int>{0, 1}));
  ASSERT_EQ(r.suspensions.size(), 2u);
  EXPECT_EQ(r.suspensions[0].job, 0);
  ASSERT_EQ(r.suspensions[0].move_to.size(), 1u);
  EXPECT_EQ(r.suspensions[0].move_to[0].node, 1);
  EXPECT_EQ(r.suspensions[1].job, 1);
  EXPECT_TRUE(r.suspensions[1].move_to.empty());
  EXPECT_NE(d.reason.find("moves job 10"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("suspends job 11"), std::string::npos) << d.reason;
  EXPECT_EQ(r.stats.moved, 1);
  EXPECT_EQ(r.stats.suspended, 2);
  EXPECT_EQ(held, 10000);  // the big job, the moved one, the one already on n1; the BE job's GPU released
  EXPECT_EQ(run(false, 10).first.decisions[0].kind, DecisionKind::kWait);
  EXPECT_EQ(run(true, 50).first.decisions[0].kind, DecisionKind::kWait);
}

}  // namespace
}  // namespace xpool
