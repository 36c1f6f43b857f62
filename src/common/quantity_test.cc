#include "common/quantity.h"

#include <gtest/gtest.h>

#include <limits>

namespace xpool {
namespace {

TEST(QuantityTest, FactoriesAndAccessors) {
  EXPECT_EQ(Quantity::FromMilli(1500).milli(), 1500);
  EXPECT_EQ(Quantity::FromMilli(1500).units(), 1);
  EXPECT_EQ(Quantity::FromUnits(3)->milli(), 3000);
  EXPECT_FALSE(Quantity::FromUnits(std::numeric_limits<int64_t>::max() / 10).ok());
}

TEST(QuantityTest, ArithmeticAndOrder) {
  Quantity a = Quantity::FromMilli(700), b = Quantity::FromMilli(300);
  EXPECT_EQ((a + b).milli(), 1000);
  EXPECT_EQ((a - b).milli(), 400);
  EXPECT_LT(b, a);
  EXPECT_EQ(Quantity::CheckedMul(a, 3)->milli(), 2100);
  EXPECT_FALSE(Quantity::CheckedAdd(Quantity::FromMilli(std::numeric_limits<int64_t>::max()), b).ok());
  EXPECT_FALSE(Quantity::CheckedSub(Quantity::FromMilli(std::numeric_limits<int64_t>::min()), b).ok());
}

TEST(QuantityTest, ToString) {
  EXPECT_EQ(Quantity::FromMilli(2000).ToString(), "2");
  EXPECT_EQ(Quantity::FromMilli(250).ToString(), "250m");
}

}  // namespace
}  // namespace xpool
