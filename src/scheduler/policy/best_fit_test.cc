#include "scheduler/policy/best_fit.h"

#include <gtest/gtest.h>

#include "model/node_builder.h"
#include "scheduler/schedule.h"

namespace xpool {
namespace {

TEST(BestFitTest, ScoreFormulaAndTruncation) {
  // Empty 8-GPU 96-core node, max spec 128 cores / 8 GPUs, a 1-GPU 12-core pod:
  // s = 0.5·84000/128000 + 0.5·7000/8000 = 0.328125 + 0.4375 = 0.765625 → (1−s)·100 = 23.4375 → 23.
  EXPECT_EQ(BestFitScore(96000, 8000, 12000, 1000, 128000, 8000), 23);
  // A perfect fit leaves nothing: 100.
  EXPECT_EQ(BestFitScore(4000, 500, 4000, 500, 128000, 8000), 100);
  // Everything left on the largest node: 0.
  EXPECT_EQ(BestFitScore(128000, 8000, 0, 0, 128000, 8000), 0);
  // Truncation, not rounding: 0.5·1/3 = 0.1666.. → 83.33.. → 83, and 0.5·2/3 → 66.66.. → 66.
  EXPECT_EQ(BestFitScore(3, 0, 2, 0, 3, 0), 83);
  EXPECT_EQ(BestFitScore(3, 0, 1, 0, 3, 0), 66);
  // Where float64 and exact arithmetic part: 0.5·5440/8000 = 0.34 exactly, so (1 − s)·100 = 66, but float64
  // gives 65.99999999999999 and the reference truncates it to 65. We follow the reference.
  EXPECT_EQ(BestFitScore(0, 5440, 0, 0, 128000, 8000), 65);
}

TEST(BestFitTest, PicksLeastLeftoverFirstOnTies) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("big").WithCpu(128000).WithGpus(8, "G3", 32768).Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("t4a").WithCpu(64000).WithGpus(2, "T4", 15360).Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("t4b").WithCpu(64000).WithGpus(2, "T4", 15360).Build()).ok());
  BestFitPolicy p;
  Rng rng(1);
  TaskRequest r;
  r.cpu_milli = 8000;
  r.device_count = 1;
  r.device_compute_milli = 500;
  ScheduleOutcome o = Schedule(s, r, p, rng);
  ASSERT_EQ(o.kind, OutcomeKind::kPlaced);
  EXPECT_EQ(o.allocation.node, 1);  // t4a and t4b tie; the first wins
  ASSERT_TRUE(s.Apply(o.allocation).ok());
  // Sharing pods go to the device with the least free compute that fits.
  r.device_compute_milli = 400;
  o = Schedule(s, r, p, rng);
  ASSERT_EQ(o.kind, OutcomeKind::kPlaced);
  EXPECT_EQ(o.allocation.node, 1);
  ASSERT_EQ(o.allocation.devices.size(), 1u);
  EXPECT_EQ(o.allocation.devices[0].device, 0);
}

}  // namespace
}  // namespace xpool
