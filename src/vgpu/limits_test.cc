#include "vgpu/limits.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xpool::vgpu {
namespace {

Limits Parse(std::vector<std::string> entries) {
  std::vector<const char*> envp;
  for (const std::string& e : entries) envp.push_back(e.c_str());
  envp.push_back(nullptr);
  return ParseLimits(envp.data());
}

TEST(LimitsTest, NoVariablesMeansNoLimits) {
  Limits limits = Parse({"PATH=/bin", "HOME=/root"});
  EXPECT_FALSE(limits.any_limit());
  EXPECT_FALSE(limits.memory_limited(0));
  EXPECT_FALSE(limits.core_limited(0));
  EXPECT_EQ(limits.error_count, 0);
}

TEST(LimitsTest, ParsesPerDeviceMemoryAndCore) {
  Limits limits = Parse({"XPOOL_DEVICE_MEMORY_LIMIT_0=1024", "XPOOL_DEVICE_MEMORY_LIMIT_3=0",
                         "XPOOL_DEVICE_CORE_LIMIT_1=30", "XPOOL_VGPU_CONTEXT_RESERVE_MIB=64"});
  EXPECT_TRUE(limits.memory_limited(0));
  EXPECT_EQ(limits.device[0].memory_bytes, 1024 * kMiB);
  EXPECT_TRUE(limits.memory_limited(3));
  EXPECT_EQ(limits.device[3].memory_bytes, 0u);
  EXPECT_FALSE(limits.memory_limited(1));
  EXPECT_TRUE(limits.core_limited(1));
  EXPECT_EQ(limits.device[1].core_percent, 30);
  EXPECT_FALSE(limits.core_limited(0));
  EXPECT_EQ(limits.context_reserve_bytes, 64 * kMiB);
  EXPECT_TRUE(limits.any_memory_limit);
  EXPECT_TRUE(limits.any_core_limit);
}

TEST(LimitsTest, HundredPercentIsNoComputeLimit) {
  Limits limits = Parse({"XPOOL_DEVICE_CORE_LIMIT_0=100"});
  EXPECT_FALSE(limits.core_limited(0));
  EXPECT_FALSE(limits.any_core_limit);
}

TEST(LimitsTest, BadValuesFailClosedWithAnError) {
  struct Row {
    const char* entry;
    int device;
    bool memory;
  };
  const Row rows[] = {
      {"XPOOL_DEVICE_MEMORY_LIMIT_0=abc", 0, true},
      {"XPOOL_DEVICE_MEMORY_LIMIT_0=-5", 0, true},
      {"XPOOL_DEVICE_MEMORY_LIMIT_0=", 0, true},
      {"XPOOL_DEVICE_MEMORY_LIMIT_0=1e3", 0, true},
      {"XPOOL_DEVICE_MEMORY_LIMIT_0=99999999999999999999", 0, true},
      {"XPOOL_DEVICE_CORE_LIMIT_2=0", 2, false},
      {"XPOOL_DEVICE_CORE_LIMIT_2=101", 2, false},
      {"XPOOL_DEVICE_CORE_LIMIT_2=half", 2, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.entry);
    Limits limits = Parse({row.entry});
    EXPECT_EQ(limits.error_count, 1);
    EXPECT_NE(std::string(limits.first_error).find("is not"), std::string::npos);
    if (row.memory) {
      EXPECT_TRUE(limits.memory_limited(row.device));
      EXPECT_EQ(limits.device[row.device].memory_bytes, 0u);
    } else {
      EXPECT_TRUE(limits.core_limited(row.device));
      EXPECT_EQ(limits.device[row.device].core_percent, 1);
    }
  }
}

TEST(LimitsTest, IgnoresOutOfRangeDevicesAndLookalikes) {
  Limits limits = Parse({"XPOOL_DEVICE_MEMORY_LIMIT_16=10", "XPOOL_DEVICE_MEMORY_LIMIT_=10",
                         "XPOOL_DEVICE_MEMORY_LIMIT_1X=10", "XXPOOL_DEVICE_MEMORY_LIMIT_0=10"});
  EXPECT_FALSE(limits.any_limit());
}

TEST(LimitsTest, ParseUint64IsStrict) {
  uint64_t v = 0;
  EXPECT_TRUE(ParseUint64("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(ParseUint64("18446744073709551616", &v));
  EXPECT_FALSE(ParseUint64(" 1", &v));
  EXPECT_FALSE(ParseUint64("+1", &v));
  EXPECT_FALSE(ParseUint64(nullptr, &v));
}

}  // namespace
}  // namespace xpool::vgpu
