#include "scheduler/policy/topology.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "model/node_builder.h"
#include "scheduler/schedule.h"

namespace xpool {
namespace {

// 4 GPUs: NVLink between 1-3 (and 0-2 weaker), PCIe elsewhere.
Node Linked(const std::string& name) {
  return MakeNode(name)
      .WithGpus(4, "V100", 32768)
      .WithLink(0, 1, 10)
      .WithLink(0, 2, 100)
      .WithLink(0, 3, 10)
      .WithLink(1, 2, 10)
      .WithLink(1, 3, 200)
      .WithLink(2, 3, 10)
      .Build();
}

TaskRequest Whole(int n) {
  TaskRequest r;
  r.cpu_milli = 1000;
  r.device_count = n;
  r.device_compute_milli = 1000;
  return r;
}

TEST(TopologyTest, PicksTheNvlinkPair) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(Linked("n")).ok());
  TopologyPolicy policy;
  Rng rng(1);
  ScheduleOutcome o = Schedule(s, Whole(2), policy, rng);
  ASSERT_EQ(o.kind, OutcomeKind::kPlaced);
  std::vector<int> got = {o.allocation.devices[0].device, o.allocation.devices[1].device};
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int>{1, 3}));
  ASSERT_TRUE(s.Apply(o.allocation).ok());
  o = Schedule(s, Whole(2), policy, rng);
  ASSERT_EQ(o.kind, OutcomeKind::kPlaced);
  got = {o.allocation.devices[0].device, o.allocation.devices[1].device};
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int>{0, 2}));
}

TEST(TopologyTest, SingleDeviceKeepsTheNvlinkPairsFree) {
  ClusterState s;
  Node n = MakeNode("n").WithGpus(3, "V100", 32768).WithLink(0, 1, 200).WithLink(0, 2, 10).WithLink(1, 2, 10).Build();
  ASSERT_TRUE(s.AddNode(n).ok());
  TopologyPolicy policy;
  Rng rng(1);
  ScheduleOutcome o = Schedule(s, Whole(1), policy, rng);
  ASSERT_EQ(o.kind, OutcomeKind::kPlaced);
  EXPECT_EQ(o.allocation.devices[0].device, 2);  // 0 and 1 stay free as an NVLink pair
}

TEST(TopologyTest, PrefersTheNodeWithTheBetterLinks) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("plain").WithGpus(4, "V100", 32768).Build()).ok());
  ASSERT_TRUE(s.AddNode(Linked("linked")).ok());
  TopologyPolicy policy;
  Rng rng(1);
  ScheduleOutcome o = Schedule(s, Whole(2), policy, rng);
  ASSERT_EQ(o.kind, OutcomeKind::kPlaced);
  EXPECT_EQ(o.allocation.node, 1);
}

TEST(TopologyTest, GreedyForLargeSubsets) {
  // 16 devices choose 8 exceeds the exhaustive limit; the greedy result still holds the strong clique.
  NodeBuilder b = MakeNode("big");
  b.WithGpus(16, "H100", 81920);
  for (int i = 0; i < 8; ++i) {
    for (int j = i + 1; j < 8; ++j) b.WithLink(2 * i, 2 * j, 100);
  }
  Node n = b.Build();
  std::vector<int> all(16);
  for (int i = 0; i < 16; ++i) all[i] = i;
  std::vector<int> chosen;
  int64_t sum = 0;
  ASSERT_TRUE(BestLinkedSubset(n, all, 8, false, &chosen, &sum));
  std::sort(chosen.begin(), chosen.end());
  EXPECT_EQ(chosen, (std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14}));
  EXPECT_EQ(sum, 28 * 100);
}

}  // namespace
}  // namespace xpool
