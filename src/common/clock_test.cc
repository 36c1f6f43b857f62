#include "common/clock.h"

#include <gtest/gtest.h>

#include "common/ids.h"

namespace xpool {
namespace {

TEST(ClockTest, FakeClockMovesOnlyWhenTold) {
  FakeClock clock(100);
  EXPECT_EQ(clock.NowMicros(), 100);
  clock.Advance(50);
  EXPECT_EQ(clock.NowMicros(), 150);
  clock.Set(7);
  EXPECT_EQ(clock.NowMicros(), 7);
}

TEST(ClockTest, RealClockIsAfter2020) {
  EXPECT_GT(RealClock::Instance().NowMicros(), int64_t{1577836800} * kMicrosPerSecond);
}

TEST(IdsTest, StrongIdsCompareAndHash) {
  JobId a(1), b(2);
  EXPECT_LT(a, b);
  EXPECT_FALSE(JobId().valid());
  EXPECT_TRUE(a.valid());
  EXPECT_EQ(std::hash<JobId>()(a), std::hash<int64_t>()(1));
  static_assert(!std::is_convertible_v<JobId, TenantId>);
  static_assert(!std::is_convertible_v<int64_t, JobId>);
}

}  // namespace
}  // namespace xpool
