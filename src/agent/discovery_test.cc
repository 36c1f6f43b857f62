#include "agent/discovery.h"

#include <gtest/gtest.h>

namespace xpool::agent {
namespace {

TEST(DiscoverNodeTest, PicksSimulatedFromSpec) {
  DiscoveryOptions options;
  options.simulate = "4xA100-80GB";
  options.node_name = "n1";
  auto report = DiscoverNode(options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->node.simulated);
  EXPECT_EQ(report->node.devices.size(), 4u);
}

TEST(DiscoverNodeTest, RejectsSpecAndFileTogether) {
  DiscoveryOptions options;
  options.simulate = "4xA100-80GB";
  options.node_file = "node.yaml";
  auto report = DiscoverNode(options);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kInvalidArgument);
}

TEST(DiscoverNodeTest, NoNvmlFallsBackToSimulatedWithNotice) {
  DiscoveryOptions options;
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  options.fallback_simulate = "4xA100-80GB";
  auto report = DiscoverNode(options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->node.simulated);
  EXPECT_EQ(report->node.devices.size(), 4u);
  EXPECT_NE(report->note.find("no NVML found"), std::string::npos) << report->note;
  EXPECT_NE(report->note.find("SIMULATED"), std::string::npos) << report->note;

  options.fallback_simulate.clear();
  auto bare = DiscoverNode(options);
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(bare->available);
  EXPECT_TRUE(bare->node.devices.empty());
}

TEST(DiscoverNodeTest, NvmlPathUsesFakeLibrary) {
  DiscoveryOptions options;
  options.nvml_library = XPOOL_FAKE_NVML_PATH;
  options.fallback_simulate = "1xT4-16GB";  // not used: NVML is there
  auto report = DiscoverNode(options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->source, "nvml");
  EXPECT_FALSE(report->node.simulated);
  EXPECT_EQ(report->node.devices.size(), 4u);
}

TEST(FormatDeviceTableTest, AlignedColumnsAndSimulatedMark) {
  DiscoveryOptions options;
  options.simulate = "1xA100-80GB,1xT4-16GB";
  options.node_name = "box";
  auto report = DiscoverNode(options);
  ASSERT_TRUE(report.ok());
  const std::string table = FormatDeviceTable(*report);
  EXPECT_NE(table.find("node box (SIMULATED): 2 device(s)"), std::string::npos) << table;
  // The MODEL column starts at the same offset in the header and in both rows.
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < table.size()) {
    size_t end = table.find('\n', start);
    lines.push_back(table.substr(start, end - start));
    start = end + 1;
  }
  size_t header = 0;
  while (header < lines.size() && lines[header].rfind("INDEX", 0) != 0) ++header;
  ASSERT_LT(header + 2, lines.size()) << table;
  const size_t col = lines[header].find("MODEL");
  EXPECT_EQ(lines[header + 1].find("A100-80GB"), col) << table;
  EXPECT_EQ(lines[header + 2].find("T4-16GB"), col) << table;
  EXPECT_EQ(lines[header + 1].find("80Gi"), lines[header].find("MEMORY")) << table;
}

TEST(ParsePcieLevelTest, KnownAndUnknown) {
  EXPECT_EQ(*ParsePcieLevel("switch"), kLinkPcieSwitch);
  EXPECT_EQ(*ParsePcieLevel("system"), kLinkSystem);
  EXPECT_FALSE(ParsePcieLevel("warp").ok());
}

}  // namespace
}  // namespace xpool::agent
