#include "sim/trace.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace xpool::sim {
namespace {

std::string Fixture(const std::string& name) {
  const char* src = std::getenv("XPOOL_SOURCE_DIR");
  return std::string(src ? src : ".") + "/src/sim/testdata/" + name;
}

TEST(TraceTest, LoadsNodeList) {
  Result<std::vector<TraceNode>> nodes = LoadNodeList(Fixture("nodes.csv"));
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[1].name, "n1");
  EXPECT_EQ((*nodes)[1].cpu_milli, 96000);
  EXPECT_EQ((*nodes)[1].memory_mib, 786432);
  EXPECT_EQ((*nodes)[1].gpu_count, 8);
  EXPECT_EQ((*nodes)[1].model, "G2");
  EXPECT_EQ((*nodes)[2].gpu_count, 0);
  EXPECT_EQ((*nodes)[2].model, "");
}

TEST(TraceTest, LoadsElevenColumnPods) {
  Result<std::vector<TracePod>> pods = LoadPodList(Fixture("pods11.csv"));
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_EQ(pods->size(), 4u);
  const TracePod& p1 = (*pods)[1];
  EXPECT_EQ(p1.gpu_milli, 460);
  EXPECT_EQ(p1.gpu_spec, (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_EQ(p1.qos, Qos::kBe);
  EXPECT_EQ(p1.phase, "Succeeded");
  EXPECT_TRUE(p1.has_times);
  EXPECT_EQ(p1.creation_time, 5);
  EXPECT_EQ(p1.deletion_time, 50);
  EXPECT_FALSE(p1.scheduled_time.has_value());
  EXPECT_EQ((*pods)[2].scheduled_time.value_or(-1), 8);
  EXPECT_EQ((*pods)[3].num_gpu, 8);
  EXPECT_EQ(PodGpuMilli((*pods)[3]), 8000);
}

TEST(TraceTest, LoadsFiveColumnPods) {
  Result<std::vector<TracePod>> pods = LoadPodList(Fixture("pods5.csv"));
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_FALSE((*pods)[0].has_times);
  EXPECT_EQ((*pods)[0].num_gpu, 2);
  EXPECT_TRUE((*pods)[1].gpu_spec.empty());
  EXPECT_EQ((*pods)[1].qos, Qos::kUnknown);
}

TEST(TraceTest, BadLineNamesFileLineAndField) {
  Result<std::vector<TracePod>> pods = LoadPodList(Fixture("pods_bad.csv"));
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(pods.status().message().find("pods_bad.csv:3"), std::string::npos) << pods.status().message();
  EXPECT_NE(pods.status().message().find("memory_mib"), std::string::npos) << pods.status().message();
}

TEST(TraceTest, MalformedLinesAreErrors) {
  const std::string header5 = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  struct Case {
    std::string text;
    std::string expect;
  } cases[] = {
      {header5 + "p,1,2,3\n", "f.csv:2: expected 5 fields"},
      {header5 + "p,1,2,1,1200\n", "gpu_milli"},
      {header5 + "p,1,2,2,500\n", "gpu_milli"},
      {header5 + "p,-1,2,0,0\n", "cpu_milli"},
      {header5 + "p,1,2,,0\n", "num_gpu"},
      {header5 + ",1,2,0,0\n", "field name"},
      {"bogus,header\n", "f.csv:1: header"},
      {"", "empty pod list"},
      {"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
       "scheduled_time\np,1,2,1,500,,XX,Running,0,1,\n",
       "field qos"},
      {"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
       "scheduled_time\np,1,2,1,500,A||B,LS,Running,0,1,\n",
       "gpu_spec"},
      {"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
       "scheduled_time\np,1,2,1,500,,LS,Running,9,1,\n",
       "deletion_time"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<std::vector<TracePod>> pods = ParsePodList(c.text, "f.csv");
    ASSERT_FALSE(pods.ok());
    EXPECT_NE(pods.status().message().find(c.expect), std::string::npos) << pods.status().message();
  }
  Result<std::vector<TraceNode>> nodes = ParseNodeList("sn,cpu_milli,memory_mib,gpu,model\nn,1,2,x,G2\n", "n.csv");
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.status().message().find("n.csv:2: field gpu"), std::string::npos) << nodes.status().message();
  nodes = ParseNodeList("sn,cpu_milli,memory_mib,gpu,model\nn,1,2,2,\n", "n.csv");
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.status().message().find("model"), std::string::npos);
}

TEST(TraceTest, MissingFileIsNotFound) {
  EXPECT_EQ(LoadNodeList("/nonexistent/x.csv").status().code(), StatusCode::kNotFound);
}

TEST(TraceTest, BuildsClusterAndRequests) {
  Result<std::vector<TraceNode>> nodes = LoadNodeList(Fixture("nodes.csv"));
  ASSERT_TRUE(nodes.ok());
  Result<ClusterState> state = BuildCluster(*nodes);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->node_count(), 3);
  EXPECT_EQ(state->totals().device_count, 10);
  EXPECT_EQ(state->totals().device_compute_capacity_milli, 10000);
  EXPECT_EQ(state->node(1).devices[7].model, "G2");

  TracePod pod;
  pod.cpu_milli = 6000;
  pod.memory_mib = 100;
  pod.num_gpu = 1;
  pod.gpu_milli = 460;
  pod.gpu_spec = {"T4"};
  TaskRequest r = PodRequest(pod);
  EXPECT_EQ(r.device_count, 1);
  EXPECT_EQ(r.device_compute_milli, 460);
  EXPECT_EQ(r.type_include, std::vector<std::string>{"T4"});
  EXPECT_TRUE(ValidateTaskRequest(r).ok());
}

}  // namespace
}  // namespace xpool::sim
