#include "sim/replay.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace xpool::sim {
namespace {

std::string Fixture(const std::string& name) {
  const char* src = std::getenv("XPOOL_SOURCE_DIR");
  return std::string(src ? src : ".") + "/src/sim/testdata/" + name;
}

// One node, one T4 (testdata/replay_nodes.csv), so every result below can be worked out by hand.
ClusterState OneGpu() {
  Result<std::vector<TraceNode>> nodes = LoadNodeList(Fixture("replay_nodes.csv"));
  EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
  Result<ClusterState> cluster = BuildCluster(*nodes);
  EXPECT_TRUE(cluster.ok()) << cluster.status().ToString();
  return std::move(*cluster);
}

ReplayResult Replay(const std::string& pods_file, const ReplayOptions& options) {
  Result<std::vector<TracePod>> pods = LoadPodList(Fixture(pods_file));
  EXPECT_TRUE(pods.ok()) << pods.status().ToString();
  Result<ReplayResult> r = RunReplay(OneGpu(), *pods, options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ReplayResult{};
}

const DelayStats* Group(const std::vector<DelayGroup>& groups, const std::string& name) {
  for (const DelayGroup& g : groups) {
    if (g.name == name) return &g.delay;
  }
  return nullptr;
}

// a (1 GPU, 0→100) runs; b (1 GPU, arrives 10, 50 s) waits for it: 100→150; c (half a GPU, arrives 20, 30 s)
// waits behind b: 150→180; big (2 GPUs) never fits the one-GPU node.
TEST(ReplayTest, PodsWaitAndLeaveAfterTheirDuration) {
  ReplayOptions o;
  o.queue = QueueMode::kFifo;
  ReplayResult r = Replay("replay_wait.csv", o);
  EXPECT_EQ(r.pods, 4);
  EXPECT_EQ(r.placed, 3);
  EXPECT_EQ(r.never_fits, 1);
  EXPECT_EQ(r.never_placed, 1);
  EXPECT_EQ(r.makespan_s, 180);
  // GPU held: 1000 milli on [0, 150), 500 on [150, 180) → 165000 / (1000 × 180).
  EXPECT_NEAR(r.allocated_pct, 100.0 * 165.0 / 180.0, 1e-9);
  EXPECT_NEAR(r.requested_pct, r.allocated_pct, 1e-9);
  // Someone waits on [10, 150), while the GPU is full.
  EXPECT_DOUBLE_EQ(r.queued_s, 140.0);
  EXPECT_NEAR(r.allocated_pct_queued, 100.0, 1e-9);
  const DelayStats* ls = Group(r.by_qos, "LS");
  ASSERT_NE(ls, nullptr);
  EXPECT_EQ(ls->pods, 3);  // a, b, big
  EXPECT_EQ(ls->placed, 2);
  EXPECT_DOUBLE_EQ(ls->p50_s, 0.0);   // a
  EXPECT_DOUBLE_EQ(ls->p99_s, 90.0);  // b: 10 → 100
  const DelayStats* be = Group(r.by_qos, "BE");
  ASSERT_NE(be, nullptr);
  EXPECT_DOUBLE_EQ(be->max_s, 130.0);  // c: 20 → 150
  EXPECT_EQ(r.suspensions, 0);
  EXPECT_EQ(r.events, 4 + 3);  // arrivals + departures
}

// --explain on the same pods: while b and then c wait the GPU is full, so no GPU is idle; the causes cover the
// whole queued time; b's wait is the longest, blocked by a GPU held at priority 50 (FIFO: one priority).
TEST(ReplayTest, ExplainAttributesQueuedTimeToCauses) {
  ReplayOptions o;
  o.queue = QueueMode::kFifo;
  o.explain = true;
  ReplayResult r = Replay("replay_wait.csv", o);
  double queued = 0, idle = 0;
  for (const WaitCauseRow& w : r.wait_causes) {
    queued += w.queued_s;
    idle += w.idle_gpu_hours;
  }
  EXPECT_DOUBLE_EQ(queued, r.queued_s);
  EXPECT_DOUBLE_EQ(idle, 0.0);
  EXPECT_DOUBLE_EQ(r.unusable_idle_gpu_hours, 0.0);
  EXPECT_DOUBLE_EQ(r.allocated_pct_queued_bound, 100.0);
  ASSERT_EQ(r.longest_waits.size(), 2u);  // b and c (big never fits: never queued)
  EXPECT_EQ(r.longest_waits[0].name, "c");
  EXPECT_DOUBLE_EQ(r.longest_waits[0].delay_s, 130.0);
  EXPECT_EQ(r.longest_waits[1].name, "b");
  EXPECT_EQ(r.longest_waits[1].cause,
            "GPU short; least-held candidate node: 1000 GPU milli by 1 jobs, top priority 50 (1 candidate nodes)");
  ASSERT_FALSE(r.wait_causes.empty());
  ASSERT_EQ(r.wait_causes.size(), 2u);  // b heads the queue on [10, 100), c on [100, 150)
  EXPECT_EQ(r.wait_causes[0].cause.rfind("LS 1 GPU: GPU short", 0), 0u) << r.wait_causes[0].cause;
  EXPECT_DOUBLE_EQ(r.wait_causes[0].queued_s, 90.0);
  EXPECT_EQ(r.wait_causes[1].cause.rfind("BE 1x500m GPU: GPU short", 0), 0u) << r.wait_causes[1].cause;
}

// Defragmentation in the replay: `small` (LS, 1 GPU) lands on the 8-GPU node while `fill` holds the 2-GPU node;
// at 1000 s `big` (Burstable, 8 GPUs) can only go where `small` runs. Without moves it waits until 5000 s; with
// moves of any priority, `small` moves to the 2-GPU node (losing the 60 s checkpoint cost: it ends at 5060 s)
// and `big` starts at once.
TEST(ReplayTest, MovesOpenAWholeNode) {
  Result<std::vector<TraceNode>> nodes = LoadNodeList(Fixture("replay_moves_nodes.csv"));
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  Result<ClusterState> cluster = BuildCluster(*nodes);
  ASSERT_TRUE(cluster.ok());
  Result<std::vector<TracePod>> pods = LoadPodList(Fixture("replay_moves.csv"));
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ReplayOptions o;
  o.checkpoint_cost_s = 60;
  Result<ReplayResult> off = RunReplay(*cluster, *pods, o);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->moves, 0);
  EXPECT_DOUBLE_EQ(Group(off->by_qos, "Burstable")->max_s, 4000.0);
  EXPECT_EQ(off->makespan_s, 6000);
  o.moves = MoveRule::kLowerPriority;  // LS is above Burstable: may not move for it
  Result<ReplayResult> lower = RunReplay(*cluster, *pods, o);
  ASSERT_TRUE(lower.ok());
  EXPECT_EQ(lower->moves, 0);
  o.moves = MoveRule::kAnyPriority;
  Result<ReplayResult> on = RunReplay(*cluster, *pods, o);
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(on->moves, 1);
  EXPECT_EQ(on->suspensions, 1);
  EXPECT_DOUBLE_EQ(Group(on->by_qos, "Burstable")->max_s, 0.0);
  EXPECT_EQ(on->makespan_s, 5060);
  EXPECT_NEAR(on->gpu_hours_lost, 60.0 / 3600.0, 1e-12);
  EXPECT_EQ(on->placed, 3);
}

// Moves and preemption together: `small` (LS) and `be` (BE, V100 only) run on the 8-GPU node, the 2-GPU T4 node
// has one GPU free from 500 s. At 1000 s `big` (Burstable, 8 GPUs) needs the 8-GPU node: `small` moves to the T4
// (ends 5000 + 60 = 5060 s), `be` has nowhere to go and is suspended (restarts when `big` leaves at 2000 s with
// 5000 − 1000 + 60 s to run: ends 6060 s). With preemption off nothing may suspend `be`: `big` waits until 5000 s,
// and --explain says why no move plan was found.
TEST(ReplayTest, MovesAndPreemptionOpenANodeTogether) {
  Result<std::vector<TraceNode>> nodes = LoadNodeList(Fixture("replay_moves_nodes.csv"));
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  Result<ClusterState> cluster = BuildCluster(*nodes);
  ASSERT_TRUE(cluster.ok());
  Result<std::vector<TracePod>> pods = LoadPodList(Fixture("replay_move_suspend.csv"));
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ReplayOptions o;
  o.checkpoint_cost_s = 60;
  o.moves = MoveRule::kAnyPriority;
  Result<ReplayResult> on = RunReplay(*cluster, *pods, o);
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(on->moves, 1);
  EXPECT_EQ(on->suspensions, 2);
  EXPECT_DOUBLE_EQ(Group(on->by_qos, "Burstable")->max_s, 0.0);
  EXPECT_EQ(on->makespan_s, 6060);
  EXPECT_NEAR(on->gpu_hours_lost, 120.0 / 3600.0, 1e-12);
  EXPECT_DOUBLE_EQ(on->queued_s, 1000.0);  // be waits on [1000, 2000)
  o.preemption = false;
  o.explain = true;
  Result<ReplayResult> off = RunReplay(*cluster, *pods, o);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->moves, 0);
  EXPECT_EQ(off->suspensions, 0);
  EXPECT_DOUBLE_EQ(Group(off->by_qos, "Burstable")->max_s, 4000.0);
  EXPECT_EQ(off->makespan_s, 6000);
  // Until `fill` leaves at 3000 s the cluster has 7 GPUs free (`be` may not be suspended); then 8, but `be`
  // (V100 only) has nowhere to move.
  ASSERT_EQ(off->wait_causes.size(), 2u);
  for (const WaitCauseRow& w : off->wait_causes) EXPECT_DOUBLE_EQ(w.queued_s, 2000.0) << w.cause;
  std::string causes = off->wait_causes[0].cause + " | " + off->wait_causes[1].cause;
  EXPECT_NE(causes.find("moves: cluster lacks free GPU"), std::string::npos) << causes;
  EXPECT_NE(causes.find("moves: no plan even unpinned (1 nodes: 1 no room for a moved whole-GPU job)"),
            std::string::npos)
      << causes;
}

// b (BE) arrives before c (LS); both wait for a. FIFO starts b first, priority starts c first.
TEST(ReplayTest, PriorityQueueStartsHigherQosFirst) {
  ReplayOptions fifo;
  fifo.queue = QueueMode::kFifo;
  ReplayResult f = Replay("replay_priority.csv", fifo);
  EXPECT_DOUBLE_EQ(Group(f.by_qos, "BE")->max_s, 90.0);   // b: 10 → 100
  EXPECT_DOUBLE_EQ(Group(f.by_qos, "LS")->max_s, 130.0);  // c: 20 → 150
  ReplayOptions prio;
  prio.preemption = false;
  ReplayResult p = Replay("replay_priority.csv", prio);
  EXPECT_DOUBLE_EQ(Group(p.by_qos, "LS")->max_s, 80.0);   // c: 20 → 100
  EXPECT_DOUBLE_EQ(Group(p.by_qos, "BE")->max_s, 120.0);  // b: 10 → 130
  EXPECT_EQ(p.makespan_s, 180);
  ASSERT_EQ(p.by_priority.size(), 2u);
  EXPECT_EQ(p.by_priority[0].name, "priority 90");
  EXPECT_DOUBLE_EQ(p.by_priority[0].delay.p95_s, 80.0);
  // Custom mapping: BE above LS turns the order back.
  Result<QosPriorities> q = ParseQosPriorities("LS=10,be=90");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  prio.qos_priority = *q;
  ReplayResult swapped = Replay("replay_priority.csv", prio);
  EXPECT_DOUBLE_EQ(Group(swapped.by_qos, "BE")->max_s, 90.0);
}

// lo (BE, 100 s of work) runs from 0; hi (LS, 20 s: deletion − scheduled, kept though it arrives at 30) comes at
// 30. lo is old enough (min runtime 10 s): suspended at 30 having worked 30 s, losing the 5 s checkpoint cost →
// 75 s left; hi runs 30→50; lo resumes 50→125.
TEST(ReplayTest, PreemptionSuspendsLowerWorkWhichLosesTheCheckpointCost) {
  ReplayOptions o;
  o.min_runtime_s = 10;
  o.checkpoint_cost_s = 5;
  ReplayResult r = Replay("replay_preempt.csv", o);
  EXPECT_EQ(r.suspensions, 1);
  EXPECT_NEAR(r.gpu_hours_lost, 5.0 / 3600.0, 1e-12);
  EXPECT_EQ(r.makespan_s, 125);
  EXPECT_DOUBLE_EQ(Group(r.by_qos, "LS")->max_s, 0.0);
  EXPECT_DOUBLE_EQ(Group(r.by_qos, "BE")->max_s, 0.0);  // delay counts to the first start
  EXPECT_NEAR(r.allocated_pct, 100.0, 1e-9);
  EXPECT_DOUBLE_EQ(r.queued_s, 20.0);  // the suspended lo waits [30, 50), keeping its place
  EXPECT_NEAR(r.allocated_pct_queued, 100.0, 1e-9);
}

// With min runtime 60 s, lo is too young at 30: hi waits until lo turns 60 s old (a wake-up with no other
// event), then lo is suspended (worked 60, loses 5 → 45 s left): hi 60→80, lo 80→125.
TEST(ReplayTest, MinRuntimeDelaysPreemptionUntilTheVictimIsOldEnough) {
  ReplayOptions o;
  o.min_runtime_s = 60;
  o.checkpoint_cost_s = 5;
  ReplayResult r = Replay("replay_preempt.csv", o);
  EXPECT_EQ(r.suspensions, 1);
  EXPECT_DOUBLE_EQ(Group(r.by_qos, "LS")->max_s, 30.0);
  EXPECT_EQ(r.makespan_s, 125);
  EXPECT_DOUBLE_EQ(r.queued_s, 50.0);  // hi [30, 60), lo [60, 80)
  ReplayOptions off = o;
  off.preemption = false;  // hi waits for lo to finish: 100→120
  ReplayResult n = Replay("replay_preempt.csv", off);
  EXPECT_EQ(n.suspensions, 0);
  EXPECT_DOUBLE_EQ(Group(n.by_qos, "LS")->max_s, 70.0);
  EXPECT_EQ(n.makespan_s, 120);
}

// Two half-GPU pods share the GPU; without sharing the second waits and each holds a whole GPU.
TEST(ReplayTest, WholeGpusWithoutSharing) {
  ReplayResult shared = Replay("replay_share.csv", ReplayOptions{});
  EXPECT_EQ(shared.makespan_s, 100);
  EXPECT_NEAR(shared.allocated_pct, 100.0, 1e-9);
  ReplayResult whole = Replay("replay_share.csv", WholeGpuFifo(ReplayOptions{}));
  EXPECT_EQ(whole.makespan_s, 200);
  EXPECT_NEAR(whole.allocated_pct, 100.0, 1e-9);  // a whole GPU held all the time
  EXPECT_NEAR(whole.requested_pct, 50.0, 1e-9);   // for half a GPU of work
  EXPECT_NEAR(whole.allocated_pct_queued, 100.0, 1e-9);
  EXPECT_DOUBLE_EQ(whole.queued_s, 100.0);
}

TEST(ReplayTest, SpeedupCompressesArrivalsNotDurations) {
  ReplayOptions o;
  o.queue = QueueMode::kFifo;
  o.speedup = 10;  // b arrives at 1, c at 2
  ReplayResult r = Replay("replay_wait.csv", o);
  EXPECT_EQ(r.makespan_s, 180);
  EXPECT_DOUBLE_EQ(Group(r.by_qos, "BE")->max_s, 148.0);  // c: 2 → 150
}

TEST(ReplayTest, TimelineAveragesOverBuckets) {
  ReplayOptions o;
  o.queue = QueueMode::kFifo;
  o.max_timeline_points = 2;  // [0, 90) and [90, 180)
  ReplayResult r = Replay("replay_wait.csv", o);
  ASSERT_EQ(r.timeline.size(), 2u);
  EXPECT_NEAR(r.timeline[0].allocated_pct, 100.0, 1e-9);
  EXPECT_NEAR(r.timeline[1].allocated_pct, 100.0 * (60.0 + 15.0) / 90.0, 1e-9);
  EXPECT_EQ(r.timeline[0].waiting, 2);  // b and c
  EXPECT_EQ(TimelineCsv(r).substr(0, 40), "time_s,allocated_pct,requested_pct,waiti");
}

TEST(ReplayTest, PodListWithoutTimesIsAClearError) {
  Result<std::vector<TracePod>> pods = LoadPodList(Fixture("pods5.csv"));
  ASSERT_TRUE(pods.ok());
  Result<ReplayResult> r = RunReplay(OneGpu(), *pods, ReplayOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("has no times"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("p0"), std::string::npos);
}

TEST(ReplayTest, BadOptionsAreErrors) {
  EXPECT_FALSE(ParseQosPriorities("LS=101").ok());
  EXPECT_FALSE(ParseQosPriorities("XX=1").ok());
  EXPECT_FALSE(ParseQosPriorities("LS").ok());
  Result<QosPriorities> q = ParseQosPriorities("Burstable=70");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ((*q)[static_cast<int>(Qos::kBurstable)], 70);
  EXPECT_EQ((*q)[static_cast<int>(Qos::kLs)], 90);
  ReplayOptions o;
  o.speedup = 0;
  EXPECT_FALSE(RunReplay(OneGpu(), {}, o).ok());
  o = ReplayOptions{};
  o.policy = "no-such-policy";
  EXPECT_FALSE(RunReplay(OneGpu(), {}, o).ok());
}

TEST(ReplayTest, SpreadNodesTakesEvenlySpacedNodes) {
  std::vector<TraceNode> nodes(10);
  for (int i = 0; i < 10; ++i) nodes[i].name = "n" + std::to_string(i);
  std::vector<TraceNode> some = SpreadNodes(nodes, 4);
  ASSERT_EQ(some.size(), 4u);
  EXPECT_EQ(some[0].name, "n0");
  EXPECT_EQ(some[1].name, "n2");  // 1·10/4
  EXPECT_EQ(some[2].name, "n5");
  EXPECT_EQ(some[3].name, "n7");
  EXPECT_EQ(SpreadNodes(nodes, 0).size(), 10u);
  EXPECT_EQ(SpreadNodes(nodes, 20).size(), 10u);
}

TEST(ReplayTest, PercentileIsNearestRank) {
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0.0);
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4}, 50), 2.0);
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4}, 95), 4.0);
  EXPECT_DOUBLE_EQ(Percentile({7}, 99), 7.0);
}

}  // namespace
}  // namespace xpool::sim
