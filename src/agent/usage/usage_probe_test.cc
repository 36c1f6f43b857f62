// The agent's usage probes: simulated numbers, the runtime library's shared regions, NVML (the fake library).
#include "agent/usage/usage_probe.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "agent/nvml/nvml_discovery.h"
#include "agent/nvml/nvml_mig.h"
#include "agent/nvml/nvml_usage.h"
#include "common/testing/test_util.h"
#include "model/node_builder.h"
#include "vgpu/shared_region.h"

namespace xpool::agent {
namespace {

protocol::TaskDevice Grant(int index, int64_t memory_mib, int core_percent) {
  protocol::TaskDevice d;
  d.index = index;
  d.memory_mib = memory_mib;
  d.core_percent = core_percent;
  return d;
}

TEST(SimulatedUsageProbeTest, HalfTheMemoryGrantAndSixtyPercentOfTheComputeGrant) {
  Node node = MakeNode("n1").WithGpus(3, "A100", 81920).Simulated().Build();
  std::vector<TaskOnNode> tasks = {
      {"a", 100, {Grant(0, 20000, 50)}, ""},                // 10000 MiB, 300 ‰
      {"b", 101, {Grant(0, 8000, 0), Grant(1, 0, 0)}, ""},  // 4000 + 40960 MiB; 600 ‰ each
      {"adopted", 102, {}, ""},                             // grants unknown: not measured
  };
  SimulatedUsageProbe probe;
  auto sample = probe.Sample(node, tasks);
  ASSERT_TRUE(sample.ok());
  ASSERT_EQ(sample->devices.size(), 3u);
  EXPECT_EQ(sample->devices[0].used_memory_mib, 14000);
  EXPECT_EQ(sample->devices[0].sm_permille, 900);
  EXPECT_EQ(sample->devices[1].used_memory_mib, 40960);
  EXPECT_EQ(sample->devices[1].sm_permille, 600);
  EXPECT_EQ(sample->devices[2].used_memory_mib, 0);  // idle, measured as such
  EXPECT_EQ(sample->devices[2].sm_permille, 0);
  EXPECT_EQ(sample->task_memory["a"], 10000);
  EXPECT_EQ(sample->task_memory["b"], 44960);
  EXPECT_EQ(sample->task_memory.count("adopted"), 0u);

  // Over-full devices are capped at the device.
  tasks = {{"x", 1, {Grant(2, 0, 0)}, ""}, {"y", 2, {Grant(2, 0, 0)}, ""}, {"z", 3, {Grant(2, 0, 0)}, ""}};
  sample = probe.Sample(node, tasks);
  EXPECT_EQ(sample->devices[2].used_memory_mib, 81920);
  EXPECT_EQ(sample->devices[2].sm_permille, 1000);
}

TEST(TaskMemoryFromRegionsTest, SumsTheLiveProcessesChargesOverDevicesInMib) {
  const std::string dir = FreshDir("usage_regions_" + CurrentTestName());
  const std::string path = dir + "/vgpu.region";
  vgpu::SharedRegion region;
  char why[128];
  ASSERT_EQ(region.OpenFile(path.c_str(), "12/0", why, sizeof(why)), vgpu::SharedRegion::OpenStatus::kOk) << why;
  ASSERT_TRUE(region.Attach(getpid(), vgpu::ProcessStartTime(getpid())));
  ASSERT_TRUE(region.TryCharge(0, 300 * vgpu::kMiB, 1024 * vgpu::kMiB));
  ASSERT_TRUE(region.TryCharge(1, 100 * vgpu::kMiB + 1, 1024 * vgpu::kMiB));
  auto memory = TaskMemoryFromRegions({{"with-region", getpid(), {}, path}, {"none", 1, {}, dir + "/missing"}});
  EXPECT_EQ(memory["with-region"], 401);  // 400 MiB and a byte: rounded up
  EXPECT_EQ(memory.count("none"), 0u);
  region.Detach();
  std::filesystem::remove_all(dir);
}

class NvmlUsageProbeTest : public testing::Test {
 protected:
  void TearDown() override {
    for (const char* v : {"FAKE_NVML_COUNT", "FAKE_NVML_LOST", "FAKE_NVML_USED_MIB", "FAKE_NVML_GPU_UTIL",
                          "FAKE_NVML_PROC_PID", "FAKE_NVML_PROC_MIB"}) {
      unsetenv(v);
    }
  }
};

TEST_F(NvmlUsageProbeTest, DeviceMemoryUtilisationAndProcessesMappedToTasksByAncestry) {
  setenv("FAKE_NVML_COUNT", "3", 1);
  setenv("FAKE_NVML_LOST", "2", 1);
  setenv("FAKE_NVML_USED_MIB", "1000", 1);
  setenv("FAKE_NVML_GPU_UTIL", "40", 1);
  setenv("FAKE_NVML_PROC_PID", std::to_string(getpid()).c_str(), 1);
  setenv("FAKE_NVML_PROC_MIB", "700", 1);
  Node node = MakeNode("n1").WithGpus(3, "A100", 81920).Build();
  NvmlUsageProbe probe(XPOOL_FAKE_NVML_PATH);
  // The task's top process is this test's parent: the GPU process (this one) is its descendant.
  auto sample = probe.Sample(node, {{"t1", getppid(), {}, ""}, {"other", 1, {}, ""}});
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  ASSERT_EQ(sample->devices.size(), 2u);  // device 2 is lost: not measured
  EXPECT_EQ(sample->devices[0].used_memory_mib, 1000);
  EXPECT_EQ(sample->devices[0].sm_permille, 400);
  EXPECT_EQ(sample->devices[1].used_memory_mib, 2000);
  EXPECT_EQ(sample->devices[1].sm_permille, 410);
  EXPECT_EQ(sample->task_memory["t1"], 1400);  // 700 MiB on each of the two measured devices
  EXPECT_EQ(sample->task_memory.count("other"), 0u);
}

// With MIG instances among a node's devices, positions are not NVML's numbers: devices are found by uuid.
TEST_F(NvmlUsageProbeTest, OnAMigNodeDevicesAreFoundByUuid) {
  const std::string state = testing::TempDir() + "/xpool_usage_mig_state";
  std::remove(state.c_str());
  setenv("FAKE_NVML_MIG_STATE", state.c_str(), 1);
  setenv("FAKE_NVML_USED_MIB", "1000", 1);
  setenv("FAKE_NVML_GPU_UTIL", "40", 1);
  {
    auto nvml = NvmlMig::Open(XPOOL_FAKE_NVML_PATH);
    ASSERT_TRUE(nvml.ok()) << nvml.status().ToString();
    ASSERT_TRUE(ApplyMigGeometry(**nvml, *ParseMigGeometry("0=3g.40gb,2x1g.10gb")).ok());
  }
  auto report = NvmlDiscovery(XPOOL_FAKE_NVML_PATH, "/nonexistent", "n1").Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->node.devices.size(), 6u);  // three instances, GPU 1, two T4s
  NvmlUsageProbe probe(XPOOL_FAKE_NVML_PATH);
  auto sample = probe.Sample(report->node, {});
  unsetenv("FAKE_NVML_MIG_STATE");
  std::remove(state.c_str());
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_EQ(sample->devices[0].used_memory_mib, 0);     // the 3g.40gb instance: nothing allocated on it
  EXPECT_EQ(sample->devices[3].used_memory_mib, 2000);  // GPU 1, not NVML's device 3
  EXPECT_EQ(sample->devices[3].sm_permille, 410);
  EXPECT_EQ(sample->devices[5].used_memory_mib, 4000);  // NVML's device 3
}

TEST_F(NvmlUsageProbeTest, NoUtilisationLeavesItUnmeasuredAndNoLibraryIsAnError) {
  setenv("FAKE_NVML_COUNT", "1", 1);
  Node node = MakeNode("n1").WithGpus(1, "A100", 81920).Build();
  NvmlUsageProbe probe(XPOOL_FAKE_NVML_PATH);
  auto sample = probe.Sample(node, {});
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->devices[0].used_memory_mib, 0);
  EXPECT_EQ(sample->devices[0].sm_permille, -1);
  NvmlUsageProbe missing("/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(missing.Sample(node, {}).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace xpool::agent
