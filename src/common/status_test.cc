#include "common/status.h"

#include <gtest/gtest.h>

namespace xpool {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError(std::to_string(x) + " is odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int half, Half(x));
  ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

Status CheckEven(int x) {
  RETURN_IF_ERROR(Half(x));
  return Status::Ok();
}

TEST(StatusTest, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s = NotFoundError("job 7");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: job 7");
  EXPECT_EQ(s.WithContext("get").message(), "get: job 7");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(CheckOkTest, AnOkStatusOrValueGoesOn) {
  CheckOk(Status::Ok(), "nothing to fail");
  CheckOk(Result<int>(3), "nothing to fail");
  IgnoreError(NotFoundError("gone"), "best effort");
}

TEST(CheckOkDeathTest, AFailureIsABugWhereAssertionsAreOn) {
#ifdef NDEBUG
  GTEST_SKIP() << "assertions are off in this build: a failed CheckOk is only printed";
#else
  EXPECT_DEATH(CheckOk(InternalError("broken"), "undoing what was just applied"),
               "cannot fail \\(undoing what was just applied\\) failed: .*broken");
  EXPECT_DEATH(CheckOk(Result<int>(NotFoundError("no such node")), "valid nodes"), "valid nodes.*no such node");
#endif
}

TEST(ResultTest, ValueAndError) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> odd = Quarter(6);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().message(), "3 is odd");
  EXPECT_EQ(odd.value_or(-1), -1);
}

TEST(ResultTest, ReturnIfErrorPropagates) {
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(5).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace xpool
