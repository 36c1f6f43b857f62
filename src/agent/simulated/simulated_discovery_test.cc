#include "agent/simulated/simulated_discovery.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace xpool::agent {
namespace {

Node Named(const char* name) {
  Node n;
  n.name = name;
  return n;
}

TEST(SimulateSpecTest, GoodSpecs) {
  struct Case {
    const char* spec;
    size_t devices;
    const char* first_model;
    int64_t first_mib;
    const char* last_model;
    int64_t last_mib;
    Vendor last_vendor;
  };
  const Case cases[] = {
      {"4xA100-80GB", 4, "A100-80GB", 81920, "A100-80GB", 81920, Vendor::kNvidia},
      {"2xA100-80GB,2xT4-16GB", 4, "A100-80GB", 81920, "T4-16GB", 16384, Vendor::kNvidia},
      {"1xA100-SXM4-40Gi", 1, "A100-SXM4-40Gi", 40960, "A100-SXM4-40Gi", 40960, Vendor::kNvidia},
      {"3xV100-512MB", 3, "V100-512MB", 512, "V100-512MB", 512, Vendor::kNvidia},
      {"1xH100-80GB, 8xascend:910B-64GB", 9, "H100-80GB", 81920, "910B-64GB", 65536, Vendor::kAscend},
      {"2xT4-16384", 2, "T4-16384", 16384, "T4-16384", 16384, Vendor::kNvidia},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    Node n = Named("sim");
    ASSERT_TRUE(AppendSimulatedDevices(c.spec, &n).ok()) << AppendSimulatedDevices(c.spec, &n).ToString();
    ASSERT_EQ(n.devices.size(), c.devices);
    EXPECT_EQ(n.devices.front().model, c.first_model);
    EXPECT_EQ(n.devices.front().memory_mib, c.first_mib);
    EXPECT_EQ(n.devices.back().model, c.last_model);
    EXPECT_EQ(n.devices.back().memory_mib, c.last_mib);
    EXPECT_EQ(n.devices.back().vendor, c.last_vendor);
    EXPECT_EQ(n.devices.back().max_sharers, ProfileFor(c.last_vendor).default_max_sharers);
    for (size_t i = 0; i < n.devices.size(); ++i) {
      EXPECT_EQ(n.devices[i].index, static_cast<int>(i));
      EXPECT_EQ(n.devices[i].uuid, "SIM-sim-" + std::to_string(i));
    }
    EXPECT_TRUE(ValidateNode(n).ok());
  }
}

TEST(SimulateSpecTest, BadSpecsHaveClearErrors) {
  struct Case {
    const char* spec;
    const char* error_contains;
  };
  const Case cases[] = {
      {"", "empty"},
      {"A100-80GB", "expected COUNTxMODEL-MEMORY"},
      {"x100-80GB", "expected COUNTxMODEL-MEMORY"},
      {"0xA100-80GB", "at least 1"},
      {"-1xA100-80GB", "bad count"},
      {"fourxA100-80GB", "bad count"},
      {"4xA100", "expected MODEL-MEMORY"},
      {"4x-80GB", "expected MODEL-MEMORY"},
      {"4xA100-", "expected MODEL-MEMORY"},
      {"4xA100-80XB", "unknown unit"},
      {"4xA100-0GB", "must be positive"},
      {"4xA100-80GB,,2xT4-16GB", "empty group"},
      {"4xA100-80GB,", "empty group"},
      {"4xnvidiax:A100-80GB", "unknown vendor \"nvidiax\""},
      {"4xquantum:Q1-8GB", "unknown vendor"},
      {"300xA100-80GB", "more than 256"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    Node n = Named("sim");
    Status s = AppendSimulatedDevices(c.spec, &n);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(c.error_contains), std::string::npos) << s.message();
  }
}

TEST(SimulatedDiscoveryTest, MarksNodeSimulated) {
  SimulatedDiscovery sim("2xA100-80GB", "", "box1");
  auto report = sim.Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->node.simulated);
  EXPECT_TRUE(report->available);
  EXPECT_EQ(report->source, "simulated");
  EXPECT_EQ(report->node.name, "box1");
  EXPECT_EQ(report->node.devices[1].uuid, "SIM-box1-1");
  EXPECT_GT(report->node.cpu_milli, 0);
  EXPECT_GT(report->node.memory_mib, 0);
}

constexpr const char* kGoodYaml = R"(
name: sim-a
cpu: 32
memory: 256Gi
devices:
  - {model: A100-SXM4-80GB, memory: 80Gi, count: 2, numa: 0}
  - {model: A100-SXM4-80GB, memory: 80GB, count: 2, numa: 1, max_sharers: 4}
  - {model: MLU370, memory: 48Gi, vendor: cambricon, numa: -1}
links:
  - {a: 0, b: 1, nvlink: 12}
  - {a: 2, b: 3, score: 600}
  - {a: 0, b: 2, pcie: system}
  - {a: 1, b: 3, pcie: hostbridge}
)";

TEST(NodeYamlTest, ParsesModelsMemoryNumaLinks) {
  auto node = ParseNodeYaml(kGoodYaml, "good.yaml", Named("host"));
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->name, "sim-a");
  EXPECT_TRUE(node->simulated);
  EXPECT_EQ(node->cpu_milli, 32000);
  EXPECT_EQ(node->memory_mib, 256 * 1024);
  ASSERT_EQ(node->devices.size(), 5u);
  EXPECT_EQ(node->devices[3].numa_node, 1);
  EXPECT_EQ(node->devices[3].max_sharers, 4);
  EXPECT_EQ(node->devices[1].max_sharers, 10);
  EXPECT_EQ(node->devices[3].memory_mib, 81920);
  EXPECT_EQ(node->devices[4].vendor, Vendor::kCambricon);
  EXPECT_EQ(node->devices[4].numa_node, 0);  // -1 (unknown) → 0
  EXPECT_EQ(node->devices[4].uuid, "SIM-sim-a-4");
  ASSERT_EQ(node->links.size(), 5);
  EXPECT_EQ(node->links.Score(1, 0), 12 * kLinkNvlinkPerLane);
  EXPECT_EQ(node->links.Score(2, 3), 600);
  EXPECT_EQ(node->links.Score(2, 0), kLinkSystem);
  EXPECT_EQ(node->links.Score(3, 1), kLinkPcieHostBridge);
  EXPECT_EQ(node->links.Score(0, 4), 0);
}

TEST(NodeYamlTest, BadFilesHaveClearErrors) {
  struct Case {
    const char* yaml;
    const char* error_contains;
  };
  const Case cases[] = {
      {"devices: [", "line"},
      {"- a\n- b\n", "expected a map"},
      {"name: x\n", "devices must be a non-empty list"},
      {"devices: []\n", "devices must be a non-empty list"},
      {"devices:\n  - {memory: 8Gi}\n", "devices[0]: model is missing"},
      {"devices:\n  - {model: T4}\n", "memory is missing"},
      {"devices:\n  - {model: T4, memory: lots}\n", "memory"},
      {"devices:\n  - {model: T4, memory: 16Gi, count: 0}\n", "count must be"},
      {"devices:\n  - {model: T4, memory: 16Gi, count: two}\n", "count has a bad value"},
      {"devices:\n  - {model: T4, memory: 16Gi, colour: red}\n", "unknown field \"colour\""},
      {"devices:\n  - {model: T4, memory: 16Gi, vendor: acme}\n", "unknown vendor"},
      {"devices:\n  - {model: T4, memory: 16Gi, max_sharers: 0}\n", "max_sharers"},
      {"gpus: 4\n", "unknown field \"gpus\""},
      {"cpu: lots\ndevices:\n  - {model: T4, memory: 16Gi}\n", "cpu"},
      {"devices:\n  - {model: T4, memory: 16Gi, count: 2}\nlinks:\n  - {a: 0, b: 2, score: 1}\n", "links[0]"},
      {"devices:\n  - {model: T4, memory: 16Gi, count: 2}\nlinks:\n  - {a: 0, b: 0, score: 1}\n", "different"},
      {"devices:\n  - {model: T4, memory: 16Gi, count: 2}\nlinks:\n  - {a: 0, b: 1}\n", "exactly one"},
      {"devices:\n  - {model: T4, memory: 16Gi, count: 2}\nlinks:\n  - {a: 0, b: 1, pcie: fast}\n",
       "unknown pcie level"},
      {"devices:\n  - {model: T4, memory: 16Gi, count: 2}\nlinks:\n  - {a: 0, b: 1, nvlink: 0}\n", "lanes"},
      {"devices:\n  - {model: T4, memory: 16Gi, count: 2}\nlinks: 3\n", "links must be a list"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    auto node = ParseNodeYaml(c.yaml, "bad.yaml", Named("host"));
    ASSERT_FALSE(node.ok());
    EXPECT_EQ(node.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(node.status().message().find(c.error_contains), std::string::npos) << node.status().message();
    EXPECT_EQ(node.status().message().rfind("bad.yaml", 0), 0u) << node.status().message();
  }
}

TEST(SimulatedDiscoveryTest, ReadsNodeFile) {
  const std::string path = testing::TempDir() + "/xpool_agent_node.yaml";
  {
    std::ofstream out(path);
    out << kGoodYaml;
  }
  SimulatedDiscovery sim("", path, "");
  auto report = sim.Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->node.devices.size(), 5u);
  EXPECT_TRUE(report->node.simulated);
  std::remove(path.c_str());

  SimulatedDiscovery missing("", "/nonexistent/node.yaml", "");
  auto r = missing.Discover();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/node.yaml"), std::string::npos);
}

}  // namespace
}  // namespace xpool::agent
