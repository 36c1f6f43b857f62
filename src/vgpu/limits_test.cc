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

TEST(LimitsTest, HamiCoreNamesApplyWhereXpoolsAreAbsent) {
  Limits limits = Parse({"CUDA_DEVICE_MEMORY_LIMIT_0=8000m", "CUDA_DEVICE_MEMORY_LIMIT=2g", "CUDA_DEVICE_SM_LIMIT=30",
                         "CUDA_DEVICE_SM_LIMIT_2=70"});
  EXPECT_EQ(limits.error_count, 0) << limits.first_error;
  EXPECT_TRUE(limits.memory_limited(0));
  EXPECT_EQ(limits.device[0].memory_bytes, 8000 * kMiB);
  EXPECT_EQ(limits.device[1].memory_bytes, 2048 * kMiB);  // the value for every device
  EXPECT_EQ(limits.device[15].memory_bytes, 2048 * kMiB);
  EXPECT_EQ(limits.device[0].core_percent, 30);
  EXPECT_EQ(limits.device[2].core_percent, 70);
  EXPECT_TRUE(limits.any_core_limit);
}

TEST(LimitsTest, XpoolNamesWinOverHamiCoreNames) {
  Limits limits = Parse({"CUDA_DEVICE_MEMORY_LIMIT_0=8g", "XPOOL_DEVICE_MEMORY_LIMIT_0=1024",
                         "CUDA_DEVICE_MEMORY_LIMIT=4g", "CUDA_DEVICE_SM_LIMIT_1=20", "XPOOL_DEVICE_CORE_LIMIT_1=50"});
  EXPECT_EQ(limits.device[0].memory_bytes, 1024 * kMiB);
  EXPECT_EQ(limits.device[1].memory_bytes, 4096 * kMiB);
  EXPECT_EQ(limits.device[1].core_percent, 50);
  EXPECT_EQ(limits.device[0].core_percent, 0);
}

TEST(LimitsTest, HamiCoreZeroMeansNotSet) {
  Limits limits = Parse({"CUDA_DEVICE_MEMORY_LIMIT_0=0", "CUDA_DEVICE_MEMORY_LIMIT=1g", "CUDA_DEVICE_SM_LIMIT=0"});
  EXPECT_EQ(limits.device[0].memory_bytes, 1024 * kMiB);  // falls back to the value for every device
  EXPECT_FALSE(limits.any_core_limit);
  EXPECT_FALSE(Parse({"CUDA_DEVICE_MEMORY_LIMIT=0"}).any_memory_limit);
  EXPECT_EQ(Parse({"CUDA_DEVICE_MEMORY_LIMIT=0"}).error_count, 0);
}

TEST(LimitsTest, BadHamiCoreValuesFailClosedNamingTheVariable) {
  Limits limits = Parse({"CUDA_DEVICE_MEMORY_LIMIT_0=lots"});
  EXPECT_TRUE(limits.memory_limited(0));
  EXPECT_EQ(limits.device[0].memory_bytes, 0u);
  EXPECT_NE(std::string(limits.first_error).find("CUDA_DEVICE_MEMORY_LIMIT_0='lots'"), std::string::npos);
  limits = Parse({"CUDA_DEVICE_SM_LIMIT=150"});
  EXPECT_EQ(limits.device[3].core_percent, 1);
  EXPECT_NE(std::string(limits.first_error).find("CUDA_DEVICE_SM_LIMIT='150'"), std::string::npos);
}

TEST(LimitsTest, ParseHamiQuantityReadsWhatHamiCoreReads) {
  struct Row {
    const char* text;
    uint64_t bytes;
  };
  const Row good[] = {{"8000m", 8000 * kMiB},  {"8g", 8192 * kMiB},  {"8G", 8192 * kMiB},
                      {"512K", 512 * 1024},    {"512k", 512 * 1024}, {"1073741824", 1024 * kMiB},
                      {"0x400m", 1024 * kMiB}, {"010", 8},           {"0", 0}};
  for (const Row& row : good) {
    uint64_t bytes = 1;
    EXPECT_TRUE(ParseHamiQuantity(row.text, &bytes)) << row.text;
    EXPECT_EQ(bytes, row.bytes) << row.text;
  }
  for (const char* bad :
       {"", "m", "8x", "-1g", "+1g", "1.5g", "8 g", "0x", "08", "99999999999999999999", "17179869184g"}) {
    uint64_t bytes = 0;
    EXPECT_FALSE(ParseHamiQuantity(bad, &bytes)) << bad;
  }
}

TEST(LimitsTest, RegionPathPrefersXpoolThenTheDirectoryThenHamiCore) {
  char path[256];
  auto resolve = [&](std::vector<std::string> entries) {
    std::vector<const char*> envp;
    for (const std::string& e : entries) envp.push_back(e.c_str());
    envp.push_back(nullptr);
    const char* source = ResolveRegionPath(envp.data(), path, sizeof(path));
    return std::string(source == nullptr ? "" : source) + " " + path;
  };
  EXPECT_EQ(resolve({"XPOOL_SHARED_REGION=/r/a", "XPOOL_SHARED_REGION_DIR=/d", "CUDA_DEVICE_MEMORY_SHARED_CACHE=/c"}),
            "XPOOL_SHARED_REGION /r/a");
  EXPECT_EQ(resolve({"XPOOL_SHARED_REGION_DIR=/d", "CUDA_DEVICE_MEMORY_SHARED_CACHE=/c"}),
            "XPOOL_SHARED_REGION_DIR /d/vgpu.region");
  EXPECT_EQ(resolve({"XPOOL_SHARED_REGION_DIR=/d", "XPOOL_JOB_ID=ns/pod", "XPOOL_REPLICA=1"}),
            "XPOOL_SHARED_REGION_DIR /d/ns_pod.1.region");
  EXPECT_EQ(resolve({"XPOOL_SHARED_REGION_DIR=/d", "XPOOL_JOB_ID=../x"}), "XPOOL_SHARED_REGION_DIR /d/_._x.0.region");
  EXPECT_EQ(resolve({"CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/a.cache"}),
            "CUDA_DEVICE_MEMORY_SHARED_CACHE /usr/local/vgpu/a.cache");
  EXPECT_EQ(resolve({"PATH=/bin"}), " ");
}

}  // namespace
}  // namespace xpool::vgpu
