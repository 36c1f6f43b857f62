#include "agent/vendor/tool_discovery.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "common/testing/test_util.h"

namespace xpool::agent {
namespace {

// Each test gets a directory for fake tools: shell scripts (mode 0755) standing in for the vendors' tools.
class ToolDiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshDir("tool_" + CurrentTestName()); }
  void TearDown() override {
    if (had_path_) ::setenv("PATH", saved_path_.c_str(), 1);
    std::filesystem::remove_all(dir_);
  }

  // Writes `name` in the test's directory with `body` after the #! line; returns its path.
  std::string FakeTool(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    ::chmod(path.c_str(), 0755);
    return path;
  }
  // A fake tool that checks its arguments and prints a recorded output.
  std::string PrintingTool(const std::string& name, const std::string& args, const std::string& fixture) {
    return FakeTool(name, "[ \"$*\" = \"" + args +
                              "\" ] || { echo \"unexpected arguments: $*\" >&2; exit 2; }\n/bin/cat '" +
                              std::string(XPOOL_VENDOR_TESTDATA) + "/" + fixture + "'\n");
  }
  void SetPath(const std::string& path) {
    if (!had_path_ && std::getenv("PATH")) saved_path_ = std::getenv("PATH");
    had_path_ = true;
    ::setenv("PATH", path.c_str(), 1);
  }
  static const VendorTool& Tool(Vendor vendor) { return **ToolFor(vendor); }

  std::string dir_;
  std::string saved_path_;
  bool had_path_ = false;
};

TEST_F(ToolDiscoveryTest, RunsTheToolAndParsesItsListing) {
  const std::string tool = PrintingTool("npu-smi", "info", "npu_smi_910b_8.txt");
  VendorToolDiscovery discovery(Tool(Vendor::kAscend), tool, 5000, "npu-node");
  EXPECT_EQ(discovery.name(), "ascend");
  auto report = discovery.Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->source, "ascend");
  EXPECT_TRUE(report->available);
  EXPECT_FALSE(report->node.simulated);
  EXPECT_EQ(report->node.name, "npu-node");
  ASSERT_EQ(report->node.devices.size(), 8u);
  EXPECT_EQ(report->node.devices[7].uuid, "ASCEND-0000:42:00.0");
  EXPECT_EQ(report->note, "npu-smi info: 8 device(s)");
}

TEST_F(ToolDiscoveryTest, EveryVendorsToolWithItsArguments) {
  const std::vector<std::pair<Vendor, std::string>> fixtures = {{Vendor::kAscend, "npu_smi_310p_duo.txt"},
                                                                {Vendor::kCambricon, "cnmon_mlu370_2.txt"},
                                                                {Vendor::kHygon, "hy_smi_k100_4.txt"},
                                                                {Vendor::kIluvatar, "ixsmi_bi_v100_2.txt"},
                                                                {Vendor::kMetax, "mx_smi_c500_2.txt"}};
  ASSERT_EQ(VendorTools().size(), fixtures.size());
  for (const auto& [vendor, fixture] : fixtures) {
    SCOPED_TRACE(fixture);
    const VendorTool& t = Tool(vendor);
    std::string args;
    for (const std::string& a : t.args) args += (args.empty() ? "" : " ") + a;
    const std::string path = PrintingTool(std::string(t.program), args, fixture);
    auto report = VendorToolDiscovery(t, path, 5000, "n").Discover();
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    ASSERT_FALSE(report->node.devices.empty());
    for (const Device& d : report->node.devices) EXPECT_EQ(d.vendor, vendor);
  }
  EXPECT_FALSE(ToolFor(Vendor::kNvidia).ok());
}

TEST_F(ToolDiscoveryTest, UnhealthyDevicesAreNamedInTheNote) {
  const std::string tool = PrintingTool("mx-smi", "", "mx_smi_n260_state.txt");
  auto report = VendorToolDiscovery(Tool(Vendor::kMetax), tool, 5000, "n").Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->note, "mx-smi: 2 device(s); unhealthy: device 1: mx-smi GPU-State \"Unavailable\"");
  EXPECT_FALSE(report->node.devices[1].healthy);
}

TEST_F(ToolDiscoveryTest, MissingToolIsAnErrorNamingIt) {
  auto by_path = VendorToolDiscovery(Tool(Vendor::kAscend), dir_ + "/npu-smi", 5000, "n").Discover();
  ASSERT_FALSE(by_path.ok());
  EXPECT_EQ(by_path.status().code(), StatusCode::kNotFound);
  EXPECT_NE(by_path.status().message().find("discovery ascend: its tool " + dir_ + "/npu-smi"), std::string::npos)
      << by_path.status().message();

  SetPath(dir_);
  auto by_name = VendorToolDiscovery(Tool(Vendor::kHygon), "", 5000, "n").Discover();
  ASSERT_FALSE(by_name.ok());
  EXPECT_NE(by_name.status().message().find("hy-smi not found (PATH=" + dir_ + "), nor in /opt/hyhal/bin"),
            std::string::npos)
      << by_name.status().message();
}

// A tool that is not on PATH is found where its vendor installs it.
TEST_F(ToolDiscoveryTest, FindsTheToolInItsInstallDirectory) {
  std::filesystem::create_directories(dir_ + "/corex/bin");
  std::filesystem::create_directories(dir_ + "/empty");
  VendorTool tool = Tool(Vendor::kIluvatar);
  tool.install_dirs = {dir_ + "/nonexistent", dir_ + "/corex/bin"};
  const std::string path = PrintingTool("corex/bin/ixsmi", "", "ixsmi_bi_v100_2.txt");
  SetPath(dir_ + "/empty");
  auto found = FindTool(tool);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, path);
  auto report = VendorToolDiscovery(tool, "", 5000, "n").Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->node.devices.size(), 2u);
}

TEST_F(ToolDiscoveryTest, HangingToolIsKilledAtTheTimeout) {
  const std::string tool = FakeTool("cnmon", "echo $$ > '" + dir_ + "/pid'\nexec sleep 60\n");
  const auto start = std::chrono::steady_clock::now();
  auto report = VendorToolDiscovery(Tool(Vendor::kCambricon), tool, 300, "n").Discover();
  ASSERT_FALSE(report.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(report.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(report.status().message().find("discovery cambricon: cnmon did not finish within 300 ms (killed)"),
            std::string::npos)
      << report.status().message();
  EXPECT_FALSE(IsRunning(std::stoi(ReadFile(dir_ + "/pid"))));
}

TEST_F(ToolDiscoveryTest, FailingToolAndGarbageAreErrors) {
  const std::string failing = FakeTool("npu-smi", "echo 'dcmi module initialize failed. ret is -8005' >&2\nexit 3\n");
  auto failed = VendorToolDiscovery(Tool(Vendor::kAscend), failing, 5000, "n").Discover();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(failed.status().message(),
            "discovery ascend: npu-smi info exited with 3: dcmi module initialize failed. ret is -8005");

  const std::string garbage = PrintingTool("ixsmi", "", "ixsmi_truncated.txt");
  auto bad = VendorToolDiscovery(Tool(Vendor::kIluvatar), garbage, 5000, "n").Discover();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("discovery iluvatar (" + garbage + "): ixsmi line"), std::string::npos)
      << bad.status().message();
}

TEST_F(ToolDiscoveryTest, NoDevicesIsAReportWithoutDevices) {
  const std::string tool =
      FakeTool("hy-smi", "echo '=== System Management Interface ==='\necho 'DCU[0] : PCI Bus: N/A'\n");
  auto report = VendorToolDiscovery(Tool(Vendor::kHygon), tool, 5000, "n").Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->node.devices.size(), 1u);  // a device line is a device, even with nothing known of it
  EXPECT_FALSE(report->node.devices[0].healthy);

  const std::string empty_table = FakeTool("mx-smi",
                                           "echo 'Attached GPUs : 0'\n"
                                           "echo '| GPU  NAME | Bus-id | GPU-Util |'\n"
                                           "echo '| Temp Pwr  | Memory-Usage |  |'\n"
                                           "echo '|====+====+====|'\n");
  auto none = VendorToolDiscovery(Tool(Vendor::kMetax), empty_table, 5000, "n").Discover();
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->available);
  EXPECT_EQ(none->note, "mx-smi: 0 device(s); no metax devices on this node");
}

// DiscoverNode: a vendor source, auto-detection by the tool found on PATH, and bad combinations.
TEST_F(ToolDiscoveryTest, DiscoverNodeSelectsTheVendor) {
  DiscoveryOptions options;
  options.node_name = "n1";
  options.source = "cambricon";
  options.vendor_tool = PrintingTool("cnmon-copy", "", "cnmon_v4_no_bus.txt");
  auto chosen = DiscoverNode(options);
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->source, "cambricon");
  EXPECT_EQ(chosen->node.devices.size(), 3u);

  options.vendor_tool.clear();
  options.source = "auto";
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  PrintingTool("ixsmi", "", "ixsmi_bi_v100_2.txt");
  SetPath(dir_);
  auto detected = DiscoverNode(options);
  ASSERT_TRUE(detected.ok()) << detected.status().ToString();
  EXPECT_EQ(detected->source, "iluvatar");
  EXPECT_EQ(detected->node.devices.size(), 2u);
  EXPECT_NE(detected->note.find("no NVML found"), std::string::npos) << detected->note;
  EXPECT_NE(detected->note.find("found ixsmi: ixsmi: 2 device(s)"), std::string::npos) << detected->note;

  std::filesystem::remove(dir_ + "/ixsmi");
  options.fallback_simulate = "2xA100-80GB";
  auto fallback = DiscoverNode(options);
  ASSERT_TRUE(fallback.ok()) << fallback.status().ToString();
  EXPECT_TRUE(fallback->node.simulated);
  EXPECT_NE(fallback->note.find("no vendor tool found (npu-smi, cnmon, hy-smi, ixsmi, mx-smi)"), std::string::npos)
      << fallback->note;
}

TEST_F(ToolDiscoveryTest, DiscoverNodeRefusesBadCombinations) {
  DiscoveryOptions options;
  options.source = "tpu";
  auto unknown = DiscoverNode(options);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("known: auto, nvml, simulated, nvidia, ascend"), std::string::npos)
      << unknown.status().message();

  options.source = "auto";
  options.vendor_tool = "/usr/bin/npu-smi";
  EXPECT_EQ(DiscoverNode(options).status().code(), StatusCode::kInvalidArgument);

  options.vendor_tool.clear();
  options.source = "ascend";
  options.simulate = "4xA100-80GB";
  EXPECT_EQ(DiscoverNode(options).status().code(), StatusCode::kInvalidArgument);

  options.simulate.clear();
  options.source = "simulated";
  EXPECT_EQ(DiscoverNode(options).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace xpool::agent
