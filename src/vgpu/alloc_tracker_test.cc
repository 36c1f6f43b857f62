#include "vgpu/alloc_tracker.h"

#include <gtest/gtest.h>

namespace xpool::vgpu {
namespace {

TEST(AllocTrackerTest, TakeReturnsWhatWasChargedOnce) {
  AllocTracker tracker;
  tracker.Add(AllocKind::kLinear, 0x1000, Charge{1, 4096});
  Charge charge;
  ASSERT_TRUE(tracker.Take(AllocKind::kLinear, 0x1000, &charge));
  EXPECT_EQ(charge.device, 1);
  EXPECT_EQ(charge.bytes, 4096u);
  EXPECT_FALSE(tracker.Take(AllocKind::kLinear, 0x1000, &charge));  // a double free releases nothing
}

TEST(AllocTrackerTest, KindsDoNotCollide) {
  AllocTracker tracker;
  tracker.Add(AllocKind::kLinear, 7, Charge{0, 1});
  tracker.Add(AllocKind::kVmmHandle, 7, Charge{0, 2});
  Charge charge;
  ASSERT_TRUE(tracker.Take(AllocKind::kVmmHandle, 7, &charge));
  EXPECT_EQ(charge.bytes, 2u);
  EXPECT_EQ(tracker.size(AllocKind::kLinear), 1u);
  tracker.Clear();
  EXPECT_EQ(tracker.size(AllocKind::kLinear), 0u);
}

}  // namespace
}  // namespace xpool::vgpu
