#include <gtest/gtest.h>

#include "scheduler/policy.h"

namespace xpool {
namespace {

TEST(PolicyRegistryTest, EveryNameMakesItsPolicy) {
  ASSERT_FALSE(PolicyNames().empty());
  for (std::string_view name : PolicyNames()) {
    SCOPED_TRACE(std::string(name));
    auto p = MakePolicy(name);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ((*p)->name(), name);
  }
}

TEST(PolicyRegistryTest, UnknownNameListsTheKnownOnes) {
  auto p = MakePolicy("nope");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("best-fit"), std::string::npos);
}

}  // namespace
}  // namespace xpool
