#include "common/thread_priority.h"

#include <gtest/gtest.h>

#include <thread>

namespace xpool {
namespace {

TEST(RunNicedTest, WorkAndTheThreadsItStartsRunAtTheValue) {
  const int base = ThisThreadNice();
  if (base > 12) GTEST_SKIP() << "this test runs at nice " << base;
  int inside = -1, started = -1;
  ASSERT_TRUE(RunNiced(base + 7, [&] {
                inside = ThisThreadNice();
                std::thread child([&] { started = ThisThreadNice(); });
                child.join();
              }).ok());
  EXPECT_EQ(inside, base + 7);
  EXPECT_EQ(started, base + 7);
  EXPECT_EQ(ThisThreadNice(), base);  // the caller is unchanged
}

TEST(RunNicedTest, ZeroOrALowerValueRunsAtTheCallersValue) {
  const int base = ThisThreadNice();
  int inside = -1;
  ASSERT_TRUE(RunNiced(0, [&] { inside = ThisThreadNice(); }).ok());
  EXPECT_EQ(inside, base);
}

TEST(RunNicedTest, AValueOutsideTheRangeIsRefusedAndNothingRuns) {
  bool ran = false;
  for (int nice : {-1, 20}) {
    Status s = RunNiced(nice, [&] { ran = true; });
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << nice;
    EXPECT_NE(s.message().find("0..19"), std::string::npos) << s.ToString();
  }
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace xpool
