#include "scheduler/schedule.h"

#include <gtest/gtest.h>

#include "model/node_builder.h"
#include "scheduler/policy/best_fit.h"

namespace xpool {
namespace {

TaskRequest Gpu(int count, int64_t compute_milli) {
  TaskRequest r;
  r.cpu_milli = 1000;
  r.device_count = count;
  r.device_compute_milli = compute_milli;
  return r;
}

ClusterState TwoNodes() {
  ClusterState s;
  EXPECT_TRUE(s.AddNode(MakeNode("a").WithCpu(32000).WithGpus(2, "T4", 15360).Build()).ok());
  EXPECT_TRUE(s.AddNode(MakeNode("b").WithCpu(32000).WithGpus(8, "A100", 40960).Build()).ok());
  return s;
}

TEST(ScheduleTest, PlacesAndTheAllocationApplies) {
  ClusterState s = TwoNodes();
  BestFitPolicy policy;
  Rng rng(1);
  ScheduleOutcome o = Schedule(s, Gpu(2, 1000), policy, rng);
  ASSERT_EQ(o.kind, OutcomeKind::kPlaced) << o.reason;
  EXPECT_EQ(o.allocation.node, 0);  // best fit: the 2-GPU node is left with nothing
  ASSERT_EQ(o.allocation.devices.size(), 2u);
  EXPECT_EQ(o.allocation.devices[0].compute_milli, 1000);
  EXPECT_EQ(o.allocation.devices[0].memory_mib, 15360);  // exclusive takes the whole device
  EXPECT_TRUE(s.Apply(o.allocation).ok());
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(ScheduleTest, WaitWhenFullNowButFitsCapacity) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithGpus(1, "T4", 15360).Build()).ok());
  Allocation held;
  held.node = 0;
  held.devices = {{0, 15360, 1000}};
  ASSERT_TRUE(s.Apply(held).ok());
  BestFitPolicy policy;
  Rng rng(1);
  ScheduleOutcome o = Schedule(s, Gpu(1, 500), policy, rng);
  EXPECT_EQ(o.kind, OutcomeKind::kWait);
  EXPECT_EQ(o.reason, "1 node: every device held exclusively");
}

TEST(ScheduleTest, NeverFitsWithAggregatedReason) {
  ClusterState s = TwoNodes();
  BestFitPolicy policy;
  Rng rng(1);
  ScheduleOutcome o = Schedule(s, Gpu(9, 1000), policy, rng);
  EXPECT_EQ(o.kind, OutcomeKind::kNeverFits);
  EXPECT_EQ(o.reason, "2 nodes: fewer than 9 devices on the node");

  TaskRequest typed = Gpu(1, 100);
  typed.type_include = {"H100"};
  o = Schedule(s, typed, policy, rng);
  EXPECT_EQ(o.kind, OutcomeKind::kNeverFits);
  EXPECT_EQ(o.reason, "1 node: type A100 not among the requested types; 1 node: type T4 not among the requested types");
}

TEST(ScheduleTest, BadInputIsNeverFitsWithTheValidationMessage) {
  ClusterState s = TwoNodes();
  BestFitPolicy policy;
  Rng rng(1);
  struct Row {
    const char* name;
    TaskRequest request;
  };
  std::vector<Row> rows;
  rows.push_back({"cores above 100", Gpu(1, 1500)});
  rows.push_back({"negative cpu", [] {
                    TaskRequest r = Gpu(1, 100);
                    r.cpu_milli = -1;
                    return r;
                  }()});
  rows.push_back({"percent above 100", [] {
                    TaskRequest r = Gpu(1, 100);
                    r.device_memory_percent = 150;
                    return r;
                  }()});
  rows.push_back({"negative device count", [] {
                    TaskRequest r;
                    r.cpu_milli = 1;
                    r.device_count = -2;
                    return r;
                  }()});
  rows.push_back({"nothing asked", TaskRequest{}});
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ScheduleOutcome o = Schedule(s, row.request, policy, rng);
    EXPECT_EQ(o.kind, OutcomeKind::kNeverFits);
    EXPECT_NE(o.reason.find("invalid request"), std::string::npos) << o.reason;
  }
}

TEST(ScheduleTest, EmptyClusterNeverFits) {
  ClusterState s;
  BestFitPolicy policy;
  Rng rng(1);
  ScheduleOutcome o = Schedule(s, Gpu(1, 100), policy, rng);
  EXPECT_EQ(o.kind, OutcomeKind::kNeverFits);
  EXPECT_EQ(o.reason, "the cluster has no nodes");
}

// A policy that returns a device that does not fit: Schedule must not trust it.
class LyingPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "liar"; }
  bool Score(const ClusterState&, const TaskRequest&, const NodeCandidate&, Rng&, int64_t* score,
             std::vector<int>* chosen) override {
    *score = 1;
    chosen->assign({99});
    return true;
  }
};

TEST(ScheduleTest, InvalidDeviceChoiceIsAVeto) {
  ClusterState s = TwoNodes();
  LyingPolicy policy;
  Rng rng(1);
  ScheduleOutcome o = Schedule(s, Gpu(1, 100), policy, rng);
  EXPECT_EQ(o.kind, OutcomeKind::kWait);
  EXPECT_EQ(o.reason, "2 nodes: no device choice acceptable to the policy");
}

// Equal scores: kFirst takes the first node, kLast the last, kRandom spreads over all of them.
class FlatPolicy final : public PlacementPolicy {
 public:
  explicit FlatPolicy(TieBreak t) : tie_(t) {}
  std::string_view name() const override { return "flat"; }
  TieBreak tie_break() const override { return tie_; }
  bool Score(const ClusterState&, const TaskRequest& r, const NodeCandidate& c, Rng&, int64_t* score,
             std::vector<int>* chosen) override {
    *score = 7;
    chosen->assign(c.fitting_devices.begin(), c.fitting_devices.begin() + r.device_count);
    return true;
  }

 private:
  TieBreak tie_;
};

TEST(ScheduleTest, TieBreaks) {
  ClusterState s;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(s.AddNode(MakeNode("n" + std::to_string(i)).WithGpus(1, "T4", 15360).Build()).ok());
  Rng rng(3);
  FlatPolicy first(TieBreak::kFirst), last(TieBreak::kLast), random(TieBreak::kRandom);
  EXPECT_EQ(Schedule(s, Gpu(1, 100), first, rng).allocation.node, 0);
  EXPECT_EQ(Schedule(s, Gpu(1, 100), last, rng).allocation.node, 3);
  std::vector<int> seen(4, 0);
  for (int i = 0; i < 400; ++i) ++seen[Schedule(s, Gpu(1, 100), random, rng).allocation.node];
  for (int n = 0; n < 4; ++n) EXPECT_GT(seen[n], 50) << n;
}

}  // namespace
}  // namespace xpool
