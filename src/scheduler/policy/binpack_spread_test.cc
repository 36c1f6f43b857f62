#include "scheduler/policy/binpack_spread.h"

#include <gtest/gtest.h>

#include "model/node_builder.h"
#include "scheduler/schedule.h"

namespace xpool {
namespace {

TaskRequest Share(int64_t milli) {
  TaskRequest r;
  r.cpu_milli = 1000;
  r.device_count = 1;
  r.device_compute_milli = milli;
  return r;
}

// Two identical nodes; node 1 already runs a task on its device 2.
ClusterState HalfUsed() {
  ClusterState s;
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(s.AddNode(MakeNode("n" + std::to_string(i)).WithGpus(4, "A100", 40960).Build()).ok());
  }
  Allocation a;
  a.node = 1;
  a.cpu_milli = 1000;
  a.devices = {{2, 8192, 300}};
  EXPECT_TRUE(s.Apply(a).ok());
  return s;
}

TEST(BinpackSpreadTest, BinpackAndSpreadChooseDifferently) {
  ClusterState s = HalfUsed();
  Rng rng(1);
  BinpackSpreadPolicy binpack("binpack", PackMode::kBinpack, PackMode::kBinpack);
  BinpackSpreadPolicy spread("spread", PackMode::kSpread, PackMode::kSpread);
  ScheduleOutcome b = Schedule(s, Share(200), binpack, rng);
  ScheduleOutcome p = Schedule(s, Share(200), spread, rng);
  ASSERT_EQ(b.kind, OutcomeKind::kPlaced);
  ASSERT_EQ(p.kind, OutcomeKind::kPlaced);
  EXPECT_EQ(b.allocation.node, 1);               // the used node
  EXPECT_EQ(b.allocation.devices[0].device, 2);  // onto the used device
  EXPECT_EQ(p.allocation.node, 0);               // the empty node
  EXPECT_EQ(p.allocation.devices[0].device, 0);  // its first idle device
}

TEST(BinpackSpreadTest, DeviceModeIsIndependentOfNodeMode) {
  ClusterState s = HalfUsed();
  Rng rng(1);
  BinpackSpreadPolicy hami_default("binpack-spread", PackMode::kBinpack, PackMode::kSpread);
  ScheduleOutcome o = Schedule(s, Share(200), hami_default, rng);
  ASSERT_EQ(o.kind, OutcomeKind::kPlaced);
  EXPECT_EQ(o.allocation.node, 1);               // fullest node
  EXPECT_EQ(o.allocation.devices[0].device, 0);  // but its least used device
}

TEST(BinpackSpreadTest, UsageCountsSharersComputeAndMemory) {
  ClusterState s = HalfUsed();
  EXPECT_EQ(NodeUsagePpm(s, 0), 0);
  // 1 of 40 sharer slots + 300 of 4000 milli + 8192 of 163840 MiB.
  EXPECT_EQ(NodeUsagePpm(s, 1), 25000 + 75000 + 50000);
  EXPECT_EQ(DeviceUsagePpm(s, 1, 2), 100000 + 300000 + 200000);
}

}  // namespace
}  // namespace xpool
