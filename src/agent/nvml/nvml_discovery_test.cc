#include "agent/nvml/nvml_discovery.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace xpool::agent {
namespace {

// Sets the fake NVML's environment for one test and clears it afterwards.
class FakeNvmlTest : public testing::Test {
 protected:
  void TearDown() override {
    for (const char* v : {"FAKE_NVML_INIT_RC", "FAKE_NVML_COUNT", "FAKE_NVML_LOST", "FAKE_NVML_NO_NUMA"}) {
      unsetenv(v);
    }
  }
};

TEST_F(FakeNvmlTest, DiscoversDevicesAndTopology) {
  NvmlDiscovery nvml(XPOOL_FAKE_NVML_PATH, "/nonexistent", "gpu-box");
  auto report = nvml.Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->available);
  EXPECT_EQ(report->source, "nvml");
  const Node& n = report->node;
  EXPECT_EQ(n.name, "gpu-box");
  EXPECT_FALSE(n.simulated);
  ASSERT_EQ(n.devices.size(), 4u);
  EXPECT_EQ(n.devices[0].model, "A100-SXM4-80GB");
  EXPECT_EQ(n.devices[0].memory_mib, 81920);
  EXPECT_EQ(n.devices[3].model, "T4");
  EXPECT_EQ(n.devices[3].memory_mib, 16384);
  EXPECT_EQ(n.devices[2].uuid, "GPU-fake-0002");
  EXPECT_EQ(n.devices[3].numa_node, 1);
  for (const Device& d : n.devices) EXPECT_TRUE(d.healthy);
  ASSERT_EQ(n.links.size(), 4);
  EXPECT_EQ(n.links.Score(0, 1), 2 * kLinkNvlinkPerLane);
  EXPECT_EQ(n.links.Score(3, 2), 4 * kLinkNvlinkPerLane);
  EXPECT_EQ(n.links.Score(0, 2), kLinkPcieHostBridge);
  EXPECT_EQ(n.links.Score(1, 2), kLinkSystem);
}

TEST_F(FakeNvmlTest, NumaFromSysfsWhenNvmlCannotTell) {
  setenv("FAKE_NVML_NO_NUMA", "1", 1);
  setenv("FAKE_NVML_COUNT", "3", 1);
  const std::string sysfs = testing::TempDir() + "/xpool_fake_pci";
  // Device 0 → node 1, device 1 → -1 (unknown → 0), device 2 → no file (→ 0).
  for (auto [bus, numa] : {std::pair{"0000:01:00.0", "1"}, {"0000:02:00.0", "-1"}}) {
    std::filesystem::create_directories(sysfs + "/" + bus);
    std::ofstream(sysfs + "/" + bus + "/numa_node") << numa << "\n";
  }
  NvmlDiscovery nvml(XPOOL_FAKE_NVML_PATH, sysfs);
  auto report = nvml.Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->node.devices.size(), 3u);
  EXPECT_EQ(report->node.devices[0].numa_node, 1);
  EXPECT_EQ(report->node.devices[1].numa_node, 0);
  EXPECT_EQ(report->node.devices[2].numa_node, 0);
  std::filesystem::remove_all(sysfs);
}

TEST_F(FakeNvmlTest, LostDeviceIsUnhealthy) {
  setenv("FAKE_NVML_LOST", "1", 1);
  NvmlDiscovery nvml(XPOOL_FAKE_NVML_PATH);
  auto report = nvml.Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->node.devices[0].healthy);
  EXPECT_FALSE(report->node.devices[1].healthy);
  EXPECT_NE(report->note.find("device 1: GPU is lost"), std::string::npos) << report->note;
}

TEST_F(FakeNvmlTest, NoDevices) {
  setenv("FAKE_NVML_COUNT", "0", 1);
  NvmlDiscovery nvml(XPOOL_FAKE_NVML_PATH);
  auto report = nvml.Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->available);
  EXPECT_TRUE(report->node.devices.empty());
}

TEST_F(FakeNvmlTest, DriverNotLoadedIsNotAnError) {
  setenv("FAKE_NVML_INIT_RC", "9", 1);
  NvmlDiscovery nvml(XPOOL_FAKE_NVML_PATH);
  auto report = nvml.Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->available);
  EXPECT_NE(report->note.find("driver is not loaded"), std::string::npos);
}

TEST_F(FakeNvmlTest, InitFailureIsUnavailable) {
  setenv("FAKE_NVML_INIT_RC", "999", 1);
  NvmlDiscovery nvml(XPOOL_FAKE_NVML_PATH);
  auto report = nvml.Discover();
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(report.status().message().find("nvmlInit failed"), std::string::npos);
}

TEST(NvmlDiscoveryTest, MissingLibraryIsNotAnError) {
  NvmlDiscovery nvml("/nonexistent/libnvidia-ml.so.1");
  auto report = nvml.Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->available);
  EXPECT_TRUE(report->node.devices.empty());
  EXPECT_NE(report->note.find("no NVML found"), std::string::npos) << report->note;
  EXPECT_GT(report->node.cpu_milli, 0);
}

TEST(NvmlDiscoveryTest, LibraryWithoutNvmlSymbolsIsAnError) {
  // libc is a real shared library without NVML in it.
  NvmlDiscovery nvml("libc.so.6");
  auto report = nvml.Discover();
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(report.status().message().find("nvmlInit_v2"), std::string::npos);
}

}  // namespace
}  // namespace xpool::agent
