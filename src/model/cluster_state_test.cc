#include "model/cluster_state.h"

#include <gtest/gtest.h>

#include "model/node_builder.h"

namespace xpool {
namespace {

Allocation Grant(int node, int64_t cpu, std::vector<DeviceGrant> devices) {
  Allocation a;
  a.node = node;
  a.cpu_milli = cpu;
  a.devices = std::move(devices);
  return a;
}

TEST(ClusterStateTest, AddNodeRejectsDuplicatesAndBadNodes) {
  ClusterState s;
  EXPECT_EQ(*s.AddNode(MakeNode("a").WithGpus(2, "T4", 15360).Build()), 0);
  EXPECT_EQ(s.AddNode(MakeNode("a").Build()).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.AddNode(MakeNode("").Build()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.FindNode("a"), 0);
  EXPECT_EQ(s.FindNode("b"), -1);
  EXPECT_EQ(s.totals().device_count, 2);
  EXPECT_EQ(s.totals().device_compute_capacity_milli, 2000);
}

TEST(ClusterStateTest, ApplyAndReleaseTrackUsage) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithCpu(8000).WithGpus(2, "T4", 16000).Build()).ok());
  const uint64_t gen = s.generation(0);
  Allocation a = Grant(0, 2000, {{0, 8000, 500}});
  ASSERT_TRUE(s.Apply(a).ok());
  EXPECT_GT(s.generation(0), gen);
  EXPECT_EQ(s.FreeCpu(0), 6000);
  EXPECT_EQ(s.FreeDeviceMemory(0, 0), 8000);
  EXPECT_EQ(s.FreeDeviceCompute(0, 0), 500);
  EXPECT_EQ(s.usage(0).devices[0].sharers, 1);
  EXPECT_EQ(s.totals().device_compute_allocated_milli, 500);
  ASSERT_TRUE(s.Release(a).ok());
  EXPECT_EQ(s.FreeCpu(0), 8000);
  EXPECT_EQ(s.totals().device_compute_allocated_milli, 0);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(ClusterStateTest, ApplyIsAllOrNothing) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithCpu(8000).WithGpus(2, "T4", 16000).Build()).ok());
  ASSERT_TRUE(s.Apply(Grant(0, 0, {{1, 0, 800}})).ok());
  // Device 0 fits, device 1 lacks compute: nothing may change.
  Status st = s.Apply(Grant(0, 1000, {{0, 100, 300}, {1, 100, 300}}));
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("compute"), std::string::npos);
  EXPECT_EQ(s.FreeCpu(0), 8000);
  EXPECT_EQ(s.FreeDeviceMemory(0, 0), 16000);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(ClusterStateTest, ExclusiveGrantBlocksSharers) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithGpus(1, "A100", 40960).Build()).ok());
  Allocation whole = Grant(0, 0, {{0, 0, 1000}});
  ASSERT_TRUE(s.Apply(whole).ok());
  EXPECT_EQ(s.Apply(Grant(0, 0, {{0, 0, 0}})).code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(s.Release(whole).ok());
  ASSERT_TRUE(s.Apply(Grant(0, 0, {{0, 0, 0}})).ok());
  // A whole-device grant cannot join an existing sharer.
  EXPECT_EQ(s.Apply(whole).code(), StatusCode::kResourceExhausted);
}

TEST(ClusterStateTest, MaxSharersEnforced) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithGpus(1, "A100", 40960).WithMaxSharers(2).Build()).ok());
  ASSERT_TRUE(s.Apply(Grant(0, 0, {{0, 0, 100}})).ok());
  ASSERT_TRUE(s.Apply(Grant(0, 0, {{0, 0, 100}})).ok());
  EXPECT_EQ(s.Apply(Grant(0, 0, {{0, 0, 100}})).code(), StatusCode::kResourceExhausted);
}

Node MpsNode(const std::string& name, int gpus) {
  Node n = MakeNode(name).WithGpus(gpus, "A100", 40960).Build();
  for (Device& d : n.devices) d.mode = DeviceMode::kMps;
  return n;
}

Allocation ForUser(Allocation a, uint64_t mps_user) {
  a.mps_user = mps_user;
  return a;
}

TEST(ClusterStateTest, AnMpsDeviceHoldsOneUsersTasksAtATime) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MpsNode("a", 2)).ok());
  EXPECT_EQ(s.totals().mps_device_count, 2);
  const Allocation first = ForUser(Grant(0, 0, {{0, 1000, 300}}), 7);
  ASSERT_TRUE(s.Apply(first).ok());
  EXPECT_EQ(s.usage(0).devices[0].mps_user, 7u);
  // Another user's task waits for the device to empty; the same user's joins it; the other device is free.
  Status other = s.Apply(ForUser(Grant(0, 0, {{0, 1000, 300}}), 8));
  EXPECT_EQ(other.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(other.message().find("MPS"), std::string::npos) << other.ToString();
  EXPECT_EQ(s.Apply(Grant(0, 0, {{0, 0, 100}})).code(), StatusCode::kResourceExhausted);  // an unset user too
  const Allocation second = ForUser(Grant(0, 0, {{0, 1000, 300}}), 7);
  ASSERT_TRUE(s.Apply(second).ok());
  ASSERT_TRUE(s.Apply(ForUser(Grant(0, 0, {{1, 1000, 300}}), 8)).ok());
  EXPECT_EQ(s.usage(0).devices[1].mps_user, 8u);
  EXPECT_TRUE(s.CheckInvariants().ok());
  ASSERT_TRUE(s.Release(first).ok());
  EXPECT_EQ(s.usage(0).devices[0].mps_user, 7u);  // still held by the second
  ASSERT_TRUE(s.Release(second).ok());
  EXPECT_EQ(s.usage(0).devices[0].mps_user, 0u);
  ASSERT_TRUE(s.Apply(ForUser(Grant(0, 0, {{0, 1000, 300}}), 8)).ok());
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(ClusterStateTest, SharedDevicesTakeEveryUsersTasks) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithGpus(1, "A100", 40960).Build()).ok());
  ASSERT_TRUE(s.Apply(ForUser(Grant(0, 0, {{0, 1000, 300}}), 7)).ok());
  ASSERT_TRUE(s.Apply(ForUser(Grant(0, 0, {{0, 1000, 300}}), 8)).ok());
  EXPECT_EQ(s.usage(0).devices[0].mps_user, 0u);
  EXPECT_EQ(s.totals().mps_device_count, 0);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(ClusterStateTest, ADeviceEntersMpsModeOnlyWhileNothingHoldsIt) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithGpus(2, "A100", 40960).Build()).ok());
  const Allocation held = ForUser(Grant(0, 0, {{0, 1000, 300}}), 7);
  ASSERT_TRUE(s.Apply(held).ok());
  Status refused = s.UpdateNode(0, MpsNode("a", 2));
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("MPS"), std::string::npos) << refused.ToString();
  Node second_only = MakeNode("a").WithGpus(2, "A100", 40960).Build();
  second_only.devices[1].mode = DeviceMode::kMps;
  ASSERT_TRUE(s.UpdateNode(0, second_only).ok());
  EXPECT_EQ(s.totals().mps_device_count, 1);
  ASSERT_TRUE(s.Release(held).ok());
  ASSERT_TRUE(s.UpdateNode(0, MpsNode("a", 2)).ok());
  EXPECT_EQ(s.totals().mps_device_count, 2);
  // Leaving MPS mode while held drops the device's user: it shares with anyone again.
  ASSERT_TRUE(s.Apply(held).ok());
  ASSERT_TRUE(s.UpdateNode(0, MakeNode("a").WithGpus(2, "A100", 40960).Build()).ok());
  EXPECT_EQ(s.usage(0).devices[0].mps_user, 0u);
  EXPECT_EQ(s.totals().mps_device_count, 0);
  ASSERT_TRUE(s.Apply(ForUser(Grant(0, 0, {{0, 1000, 300}}), 8)).ok());
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(ClusterStateTest, BadAllocationsRefused) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithGpus(1, "A100", 40960).Build()).ok());
  EXPECT_EQ(s.Apply(Grant(3, 0, {})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Apply(Grant(0, 0, {{5, 0, 0}})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Apply(Grant(0, 0, {{0, 0, 0}, {0, 0, 0}})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Release(Grant(0, 10, {})).code(), StatusCode::kFailedPrecondition);
}

TEST(ClusterStateTest, UpdateNodeKeepsUsageAndRefusesShrinkBelowIt) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithCpu(8000).WithGpus(1, "A100", 40960).Build()).ok());
  ASSERT_TRUE(s.Apply(Grant(0, 4000, {})).ok());
  EXPECT_EQ(s.UpdateNode(0, MakeNode("a").WithCpu(2000).WithGpus(1, "A100", 40960).Build()).code(),
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(s.UpdateNode(0, MakeNode("a").WithCpu(16000).WithGpus(1, "A100", 40960).Build()).ok());
  EXPECT_EQ(s.FreeCpu(0), 12000);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(ClusterStateTest, UpdateNodeTakesAnotherDeviceListOnlyWhileNoDeviceIsAllocated) {
  // A GPU cut into MIG instances comes back as another device list.
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithCpu(8000).WithGpus(1, "A100", 81920).Build()).ok());
  ASSERT_TRUE(s.Apply(Grant(0, 4000, {})).ok());  // CPU only: no device position is named
  ASSERT_TRUE(s.UpdateNode(0, MakeNode("a").WithCpu(8000).WithGpus(3, "A100 MIG 2g.20gb", 20480).Build()).ok());
  EXPECT_EQ(s.totals().device_count, 3);
  EXPECT_EQ(s.totals().device_memory_capacity_mib, 3 * 20480);
  EXPECT_EQ(s.totals().device_compute_capacity_milli, 3000);
  EXPECT_EQ(s.usage(0).devices.size(), 3u);
  EXPECT_EQ(s.FreeCpu(0), 4000);
  EXPECT_TRUE(s.CheckInvariants().ok());
  ASSERT_TRUE(s.Apply(Grant(0, 0, {{2, 1024, 285}})).ok());
  const Status refused = s.UpdateNode(0, MakeNode("a").WithCpu(8000).WithGpus(1, "A100", 81920).Build());
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("device count (3 to 1) while node a device 2 is allocated"), std::string::npos)
      << refused.message();
  EXPECT_EQ(s.node(0).devices.size(), 3u);  // nothing changed
  EXPECT_EQ(s.totals().device_count, 3);
  EXPECT_TRUE(s.CheckInvariants().ok());
  ASSERT_TRUE(s.Release(Grant(0, 0, {{2, 1024, 285}})).ok());
  ASSERT_TRUE(s.UpdateNode(0, MakeNode("a").WithCpu(8000).WithGpus(1, "A100", 81920).Build()).ok());
  EXPECT_EQ(s.totals().device_count, 1);
  EXPECT_EQ(s.totals().device_memory_capacity_mib, 81920);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(ClusterStateTest, ChangeJournalAndLargestNode) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithCpu(8000).WithGpus(1, "A100", 40960).Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("b").WithCpu(32000).WithGpus(4, "T4", 15360).Build()).ok());
  EXPECT_EQ(s.totals().max_node_cpu_milli, 32000);
  EXPECT_EQ(s.totals().max_node_device_compute_milli, 4000);
  EXPECT_EQ(s.totals().max_device_memory_mib, 40960);
  const uint64_t seq = s.change_seq();
  const uint64_t described = s.description_version();
  ASSERT_TRUE(s.Apply(Grant(1, 1000, {})).ok());
  ASSERT_TRUE(s.SetNodeCordoned(0, true).ok());
  EXPECT_EQ(s.description_version(), described);  // usage and conditions are not descriptions
  std::vector<int> changed;
  ASSERT_TRUE(s.NodesChangedSince(seq, &changed));
  EXPECT_EQ(changed, (std::vector<int>{1, 0}));
  ASSERT_TRUE(s.UpdateNode(1, MakeNode("b").WithCpu(16000).WithGpus(4, "T4", 15360).Build()).ok());
  EXPECT_GT(s.description_version(), described);
  EXPECT_EQ(s.totals().max_node_cpu_milli, 16000);  // shrinking the largest node recomputes the maximum
  ASSERT_TRUE(s.UpdateNode(0, MakeNode("a").WithCpu(8000).WithGpus(1, "A100", 20480).Build()).ok());
  EXPECT_EQ(s.totals().max_device_memory_mib, 20480);
  // A reader that fell too far behind is told to rescan.
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(s.SetNodeReady(0, i % 2 == 0).ok());
  changed.clear();
  EXPECT_FALSE(s.NodesChangedSince(seq, &changed));
  EXPECT_FALSE(s.NodesChangedSince(s.change_seq() + 1, &changed));
}

}  // namespace
}  // namespace xpool
