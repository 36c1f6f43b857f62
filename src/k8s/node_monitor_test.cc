#include "k8s/node_monitor.h"

#include <gtest/gtest.h>

#include "k8s/annotations.h"
#include "k8s/internal/prometheus.h"

namespace xpool::k8s {
namespace {

// A pod bound to `node` whose container "main" holds `uuids` (in CUDA ordinal order).
PodInfo Bound(const std::string& name, const std::string& node, const std::vector<std::string>& uuids,
              const std::string& phase = "Running") {
  PodInfo p;
  p.namespace_name = "ml";
  p.name = name;
  p.uid = "uid-" + name;
  p.phase = phase;
  p.node_name = node;
  PodAssignment a;
  a.node = node;
  ContainerAssignment c;
  c.name = "main";
  for (const std::string& u : uuids) c.devices.push_back({u, u == "GPU-1" ? 1 : 0, Vendor::kNvidia, 8192, 500});
  a.containers.push_back(c);
  p.annotations[std::string(kAllocationAnnotation)] = EncodeAssignment(a);
  return p;
}

std::vector<Device> TwoGpus() {
  std::vector<Device> devices(2);
  for (int i = 0; i < 2; ++i) {
    devices[i].uuid = "GPU-" + std::to_string(i);
    devices[i].index = i;
    devices[i].model = "A100-SXM4-80GB";
    devices[i].memory_mib = 81920;
  }
  return devices;
}

std::string DeviceLabels(int i) {
  return "node=\"n1\",nodeid=\"n1\",Hostname=\"n1\",deviceuuid=\"GPU-" + std::to_string(i) + "\",UUID=\"GPU-" +
         std::to_string(i) + "\",deviceidx=\"" + std::to_string(i) + "\",model=\"A100-SXM4-80GB\",gpu=\"" +
         std::to_string(i) + "\",device=\"nvidia" + std::to_string(i) + "\"";
}

// Region usage goes to the devices of the container whose directory it is, by CUDA ordinal; every device has
// its series, at zero when nothing runs there; the text is valid exposition format.
TEST(NodeMonitorTest, UsageMetricsAttributeRegionsToTheirContainersDevices) {
  const std::vector<PodInfo> pods = {Bound("a", "n1", {"GPU-1", "GPU-0"}), Bound("b", "n1", {"GPU-1"}),
                                     Bound("gone", "n1", {"GPU-0"}, "Succeeded")};
  const std::vector<RegionUsage> regions = {{"uid-a_main", {100, 20}, 1},  // ordinal 0 is GPU-1, ordinal 1 is GPU-0
                                            {"uid-b_main", {5}, 1},        //
                                            {"uid-gone_main", {1000}, 0},  // a terminated pod's region: not attributed
                                            {"uid-stranger_main", {7}, 1}};  // no such pod
  const std::string text = UsageMetrics("n1", TwoGpus(), pods, regions);
  const Status valid = internal::CheckExposition(text);
  EXPECT_TRUE(valid.ok()) << valid.message() << "\n" << text;
  auto has = [&](const std::string& line) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n" << text;
  };
  has("xpool_device_memory_used_bytes{" + DeviceLabels(0) + "} 20");
  has("xpool_device_memory_used_bytes{" + DeviceLabels(1) + "} 105");
  has("xpool_pod_device_memory_used_bytes{podnamespace=\"ml\",podname=\"a\",poduid=\"uid-a\",container=\"main\"," +
      DeviceLabels(1) + "} 100");
  has("xpool_pod_device_memory_used_bytes{podnamespace=\"ml\",podname=\"a\",poduid=\"uid-a\",container=\"main\"," +
      DeviceLabels(0) + "} 20");
  has("xpool_device_plugin_regions{node=\"n1\",matched=\"true\"} 2");
  has("xpool_device_plugin_regions{node=\"n1\",matched=\"false\"} 2");
  EXPECT_EQ(text.find("podname=\"gone\""), std::string::npos);

  const std::string idle = UsageMetrics("n1", TwoGpus(), {}, {});
  EXPECT_TRUE(internal::CheckExposition(idle).ok()) << idle;
  EXPECT_NE(idle.find("xpool_device_memory_used_bytes{" + DeviceLabels(0) + "} 0\n"), std::string::npos) << idle;
  EXPECT_NE(idle.find("xpool_device_memory_used_bytes{" + DeviceLabels(1) + "} 0\n"), std::string::npos) << idle;
}

TEST(NodeMonitorTest, StaleRegionDirsAreThoseOfPodsGoneOrTerminated) {
  const std::vector<PodInfo> pods = {Bound("live", "n1", {"GPU-0"}), Bound("done", "n1", {"GPU-0"}, "Failed")};
  const std::vector<std::string> dirs = {
      "uid-live_main", "uid-done_main", "uid-gone_main", "uid-new_main", "lost+found", "_x", "uid-y_"};
  const std::set<std::string> allocated = {"uid-new/main"};  // allocated after the pods were listed
  EXPECT_EQ(StaleRegionDirs(dirs, pods, allocated), (std::vector<std::string>{"uid-done_main", "uid-gone_main"}));
  EXPECT_TRUE(StaleRegionDirs({}, pods, allocated).empty());
}

TEST(NodeMonitorTest, ExpositionCheckRefusesWhatPrometheusRefuses) {
  const struct {
    const char* text;
    const char* why;
  } rows[] = {
      {"x 1\n", "without a TYPE"},
      {"# TYPE x gauge\nx{a=\"1\"} 1\nx{a=\"1\"} 2\n", "same series twice"},
      {"# TYPE x gauge\nx{a=\"1} 1\n", "unterminated"},
      {"# TYPE x gauge\nx{a=\"\\q\"} 1\n", "bad escape"},
      {"# TYPE x gauge\nx one\n", "not a number"},
      {"# TYPE x gauge\n# TYPE x gauge\n", "second TYPE"},
      {"# TYPE x gauge\nx 1", "newline"},
      {"# TYPE 1x gauge\n", "bad metric name"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.text);
    const Status s = internal::CheckExposition(row.text);
    EXPECT_NE(s.message().find(row.why), std::string::npos) << s.message();
  }
  EXPECT_TRUE(internal::CheckExposition("# HELP x h\n# TYPE x counter\nx{a=\"q\\\"\\\\\\n\"} 1.5\n").ok());
}

}  // namespace
}  // namespace xpool::k8s
