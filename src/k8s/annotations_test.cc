#include "k8s/annotations.h"

#include <gtest/gtest.h>

#include "model/node_builder.h"

namespace xpool::k8s {
namespace {

TEST(AnnotationsTest, NodeDevicesRoundTrip) {
  Node n = MakeNode("n1").WithGpus(2, "A100", 81920).WithNumaNodes(2).Build();
  n.devices[1].healthy = false;
  n.devices[1].mode = DeviceMode::kExclusive;
  const std::string text = EncodeNodeDevices(n.devices);
  Result<std::vector<Device>> back = DecodeNodeDevices(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].uuid, "n1-gpu1");
  EXPECT_EQ((*back)[1].memory_mib, 81920);
  EXPECT_EQ((*back)[1].numa_node, 1);
  EXPECT_FALSE((*back)[1].healthy);
  EXPECT_EQ((*back)[1].mode, DeviceMode::kExclusive);
  EXPECT_EQ((*back)[0].max_sharers, 10);
  // A free MIG slot keeps its zero compute; any other device must have some.
  n.devices[0].mode = DeviceMode::kMigSlot;
  n.devices[0].memory_mib = 0;
  n.devices[0].compute_milli = 0;
  back = DecodeNodeDevices(EncodeNodeDevices(n.devices));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)[0].compute_milli, 0);
  EXPECT_EQ((*back)[0].mode, DeviceMode::kMigSlot);
  n.devices[0].mode = DeviceMode::kMig;
  EXPECT_NE(DecodeNodeDevices(EncodeNodeDevices(n.devices)).status().message().find("computeMilli must be positive"),
            std::string::npos);
}

TEST(AnnotationsTest, NodeDevicesDocumentedExample) {
  Result<std::vector<Device>> d = DecodeNodeDevices(
      R"({"version":1,"devices":[{"uuid":"GPU-0a1b","index":0,"vendor":"nvidia","model":"A100-SXM4-80GB",
          "memoryMiB":81920,"computeMilli":1000,"maxSharers":10,"numa":0,"mode":"shared","healthy":true}]})");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ((*d)[0].model, "A100-SXM4-80GB");
  // Only uuid, index and memoryMiB are required; the vendor's profile gives the sharing default.
  d = DecodeNodeDevices(R"({"devices":[{"uuid":"a","index":0,"memoryMiB":100,"vendor":"metax"}]})");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ((*d)[0].max_sharers, 16);
}

TEST(AnnotationsTest, BadNodeDevicesAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "invalid JSON"},
      {R"({"version":2,"devices":[]})", "version 2"},
      {R"({"devices":{}})", "devices must be a list"},
      {R"({"devices":[{"index":0,"memoryMiB":1}]})", "devices[0].uuid is missing"},
      {R"({"devices":[{"uuid":"a","index":0,"memoryMiB":"lots"}]})", "memoryMiB must be an integer"},
      {R"({"devices":[{"uuid":"a","index":0,"memoryMiB":1,"vendor":"acme"}]})", "unknown vendor"},
      {R"({"devices":[{"uuid":"a","index":0,"memoryMiB":1,"maxSharers":0}]})", "maxSharers must be 1..1024"},
      {R"({"devices":[{"uuid":"a","index":0,"memoryMiB":1,"mode":"weird"}]})", "unknown device mode"},
  };
  for (const auto& [text, expected] : cases) {
    SCOPED_TRACE(text);
    Result<std::vector<Device>> d = DecodeNodeDevices(text);
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find(expected), std::string::npos) << d.status().message();
  }
}

TEST(AnnotationsTest, NodeFromKube) {
  KubeNode k;
  k.name = "n1";
  k.ready = false;
  k.unschedulable = true;
  Result<Node> n = NodeFromKube(k);
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(n->devices.empty());
  EXPECT_FALSE(n->ready);
  EXPECT_TRUE(n->cordoned);
  Node built = MakeNode("n1").WithGpus(2, "T4", 15360).Build();
  k.annotations[std::string(kNodeDevicesAnnotation)] = EncodeNodeDevices(built.devices);
  n = NodeFromKube(k);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->devices.size(), 2u);
  built.devices[1].uuid = built.devices[0].uuid;
  k.annotations[std::string(kNodeDevicesAnnotation)] = EncodeNodeDevices(built.devices);
  EXPECT_FALSE(NodeFromKube(k).ok());  // duplicate uuid
}

TEST(AnnotationsTest, AssignmentRoundTrip) {
  PodAssignment a;
  a.node = "gpu-node-1";
  a.containers.push_back(
      {"train", {{"GPU-0a1b", 0, Vendor::kNvidia, 40960, 500}, {"GPU-2", 3, Vendor::kNvidia, 1, 0}}});
  a.containers.push_back({"side", {{"MLU-1", 1, Vendor::kCambricon, 10, 10}}});
  Result<PodAssignment> back = DecodeAssignment(EncodeAssignment(a));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->node, "gpu-node-1");
  ASSERT_EQ(back->containers.size(), 2u);
  EXPECT_EQ(back->containers[0].devices[1].index, 3);
  EXPECT_EQ(back->containers[0].devices[0].compute_milli, 500);
  EXPECT_EQ(back->containers[1].devices[0].vendor, Vendor::kCambricon);
  EXPECT_FALSE(DecodeAssignment(R"({"containers":[]})").ok());
  EXPECT_FALSE(DecodeAssignment(R"({"node":"n","containers":[{"name":"c","devices":[{"uuid":"u"}]}]})").ok());
}

}  // namespace
}  // namespace xpool::k8s
