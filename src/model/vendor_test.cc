#include "model/vendor.h"

#include <gtest/gtest.h>

#include <set>

namespace xpool {
namespace {

TEST(VendorTest, EveryVendorHasAProfileWithDistinctNames) {
  std::set<std::string_view> names, count_resources;
  for (const VendorProfile& p : AllVendorProfiles()) {
    SCOPED_TRACE(std::string(p.name));
    EXPECT_EQ(&ProfileFor(p.vendor), &p);
    EXPECT_FALSE(p.count_resource.empty());
    EXPECT_FALSE(p.memory_resource.empty());
    EXPECT_FALSE(p.visible_devices_env.empty());
    EXPECT_GE(p.default_max_sharers, 1);
    EXPECT_GE(p.memory_unit_mib, 1);
    EXPECT_EQ(p.supports_core_limit, !p.cores_resource.empty());
    EXPECT_TRUE(names.insert(p.name).second);
    EXPECT_TRUE(count_resources.insert(p.count_resource).second);
    EXPECT_EQ(*ParseVendor(p.name), p.vendor);
  }
  EXPECT_EQ(names.size(), 6u);
}

TEST(VendorTest, NvidiaUsesHamiNames) {
  const VendorProfile& p = ProfileFor(Vendor::kNvidia);
  EXPECT_EQ(p.count_resource, "nvidia.com/gpu");
  EXPECT_EQ(p.memory_resource, "nvidia.com/gpumem");
  EXPECT_EQ(p.memory_percent_resource, "nvidia.com/gpumem-percentage");
  EXPECT_EQ(p.cores_resource, "nvidia.com/gpucores");
  EXPECT_EQ(p.default_max_sharers, 10);
}

TEST(VendorTest, UnknownVendorIsInvalidArgument) {
  auto v = ParseVendor("voodoo");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(v.status().message().find("nvidia"), std::string::npos);
  EXPECT_EQ(*ParseVendor("NVIDIA"), Vendor::kNvidia);
}

}  // namespace
}  // namespace xpool
