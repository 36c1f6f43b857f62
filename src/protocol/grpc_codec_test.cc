// The protobuf codec of the agent protocol (both directions).
#include "protocol/grpc_codec.h"

#include <gtest/gtest.h>

#include "agent/v1/agent.pb.h"
#include "model/node_builder.h"
#include "protocol/testdata/sample_messages.h"

namespace xpool::protocol {
namespace {

TEST(GrpcCodecTest, NodeRoundTripsWithTopologyAndLabels) {
  Node node = MakeNode("n1")
                  .WithCpu(16000)
                  .WithMemory(65536)
                  .WithGpus(2, "A100-80GB", 81920)
                  .WithNumaNodes(2)
                  .WithLink(0, 1, 200)
                  .WithLabel("zone", "a")
                  .Simulated()
                  .Build();
  node.devices[1].healthy = false;
  node.devices[1].mode = DeviceMode::kExclusive;
  v1::Node p;
  NodeToProto(node, &p);
  auto back = NodeFromProto(p);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->name, "n1");
  EXPECT_EQ(back->cpu_milli, 16000);
  EXPECT_EQ(back->memory_mib, 65536);
  EXPECT_TRUE(back->simulated);
  EXPECT_EQ(back->labels.at("zone"), "a");
  ASSERT_EQ(back->devices.size(), 2u);
  EXPECT_EQ(back->devices[1].uuid, node.devices[1].uuid);
  EXPECT_EQ(back->devices[1].model, "A100-80GB");
  EXPECT_EQ(back->devices[1].memory_mib, 81920);
  EXPECT_EQ(back->devices[1].numa_node, node.devices[1].numa_node);
  EXPECT_EQ(back->devices[1].mode, DeviceMode::kExclusive);
  EXPECT_FALSE(back->devices[1].healthy);
  ASSERT_EQ(back->links.size(), 2);
  EXPECT_EQ(back->links.Score(1, 0), 200);
}

// A free MIG slot has no compute: proto3's 0 must not read back as a whole device.
TEST(GrpcCodecTest, AFreeMigSlotKeepsNoCompute) {
  Node node = MakeNode("m").WithGpus(2, "A100-SXM4-80GB MIG 3g.40gb", 40960).Build();
  node.devices[0].compute_milli = 428;
  node.devices[0].mode = DeviceMode::kMig;
  node.devices[1] = Device{.model = "A100-SXM4-80GB MIG slot 4", .uuid = "GPU-0/slot4", .index = 1};
  node.devices[1].memory_mib = 0;
  node.devices[1].compute_milli = 0;
  node.devices[1].mode = DeviceMode::kMigSlot;
  v1::Node p;
  NodeToProto(node, &p);
  auto back = NodeFromProto(p);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->devices[0].compute_milli, 428);
  EXPECT_EQ(back->devices[1].compute_milli, 0);
  EXPECT_EQ(back->devices[1].mode, DeviceMode::kMigSlot);
  EXPECT_TRUE(ValidateNode(*back).ok()) << ValidateNode(*back).ToString();
}

TEST(GrpcCodecTest, BadNodesAreInvalidArgumentNamingTheField) {
  Node node = MakeNode("n1").WithGpus(2, "A100", 1024).Build();
  v1::Node p;
  NodeToProto(node, &p);
  v1::Node bad = p;
  bad.mutable_devices(1)->set_vendor("acme");
  auto r = NodeFromProto(bad);
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("devices[1].vendor"), std::string::npos) << r.status().message();
  bad = p;
  bad.add_link_scores(5);  // 1 score for 2 devices
  r = NodeFromProto(bad);
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("link_scores"), std::string::npos);
  bad = p;
  bad.set_name("");
  EXPECT_EQ(NodeFromProto(bad).status().code(), StatusCode::kInvalidArgument);
  bad = p;
  bad.mutable_devices(0)->set_memory_mib(-1);
  EXPECT_EQ(NodeFromProto(bad).status().code(), StatusCode::kInvalidArgument);
  bad = p;
  bad.mutable_devices(1)->set_uuid(p.devices(0).uuid());
  EXPECT_EQ(NodeFromProto(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(GrpcCodecTest, HeartbeatRoundTripsReportsAndLogs) {
  Node node = MakeNode("n1").WithGpus(2, "A100", 1024).Build();
  node.devices[0].healthy = false;
  TaskReport r = test_data::SampleFailedReport();
  r.log_data = "step 1\nbad \xff byte\n";
  v1::HeartbeatRequest p;
  HeartbeatToProto(node, {r}, &p);
  EXPECT_EQ(p.node(), "n1");
  auto back = HeartbeatFromProto(p);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->has_tasks);
  ASSERT_EQ(back->device_health.size(), 2u);
  EXPECT_EQ(back->device_health[0], std::make_pair(0, false));
  ASSERT_EQ(back->tasks.size(), 1u);
  const TaskReport& b = back->tasks[0];
  test_data::ExpectSameReportButLog(b, r);
  EXPECT_EQ(b.log_data, "step 1\nbad ? byte\n");  // same length: offsets stay byte offsets

  v1::HeartbeatRequest bad = p;
  bad.mutable_tasks(0)->set_state(static_cast<v1::TaskState>(99));
  EXPECT_EQ(HeartbeatFromProto(bad).status().code(), StatusCode::kInvalidArgument);
  bad = p;
  bad.mutable_tasks(0)->set_task_id("");
  EXPECT_EQ(HeartbeatFromProto(bad).status().code(), StatusCode::kInvalidArgument);
  bad = p;
  bad.mutable_tasks(0)->set_log_offset(-5);
  EXPECT_EQ(HeartbeatFromProto(bad).status().code(), StatusCode::kInvalidArgument);
  bad = p;
  bad.mutable_tasks(0)->set_log_end(-1);
  EXPECT_EQ(HeartbeatFromProto(bad).status().code(), StatusCode::kInvalidArgument);
  bad = p;
  bad.mutable_tasks(0)->clear_log_end();  // not sent (a running task): unknown
  EXPECT_EQ(HeartbeatFromProto(bad)->tasks[0].log_end, -1);
}

TEST(GrpcCodecTest, HeartbeatCarriesMeasuredUseAndOldAgentsSendNone) {
  Node node = MakeNode("n1").WithGpus(2, "A100", 81920).Build();
  TaskReport r = test_data::SampleFailedReport();
  r.used_memory_mib = 512;
  v1::HeartbeatRequest p;
  HeartbeatToProto(node, {r}, &p, {DeviceUsageSample{0, 1000, 0}});  // measured idle: sent, unlike unmeasured
  EXPECT_FALSE(p.devices(1).has_used_memory_mib());
  auto back = HeartbeatFromProto(p);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->device_usage.size(), 1u);
  EXPECT_EQ(back->device_usage[0].index, 0);
  EXPECT_EQ(back->device_usage[0].used_memory_mib, 1000);
  EXPECT_EQ(back->device_usage[0].sm_permille, 0);
  EXPECT_EQ(back->tasks[0].used_memory_mib, 512);

  v1::HeartbeatRequest old = p;  // what an agent without the fields sends
  old.mutable_devices(0)->clear_used_memory_mib();
  old.mutable_devices(0)->clear_sm_permille();
  old.mutable_tasks(0)->clear_used_memory_mib();
  auto old_back = HeartbeatFromProto(old);
  ASSERT_TRUE(old_back.ok());
  EXPECT_TRUE(old_back->device_usage.empty());
  EXPECT_EQ(old_back->tasks[0].used_memory_mib, -1);

  v1::HeartbeatRequest bad = p;
  bad.mutable_devices(0)->set_sm_permille(1500);
  EXPECT_EQ(HeartbeatFromProto(bad).status().code(), StatusCode::kInvalidArgument);
  bad = p;
  bad.mutable_tasks(0)->set_used_memory_mib(-2);
  EXPECT_EQ(HeartbeatFromProto(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(GrpcCodecTest, ReplyRoundTrips) {
  HeartbeatReply reply;
  reply.interval_micros = 750'000;
  reply.node_timeout_micros = 6'000'000;
  reply.mig_geometry = "0=2x1g.10gb;1=7g.80gb";
  TaskAssignment a = test_data::SampleSharedSuspend();
  a.spec.vendor = Vendor::kAscend;
  TaskAssignment whole;
  whole.spec.task_id = "job8-r0";
  whole.spec.argv = {"true"};
  whole.spec.devices = {{0, 0, 0}};
  reply.tasks = {a, whole};
  v1::HeartbeatReply p;
  ReplyToProto(reply, &p);
  auto back = ReplyFromProto(p);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->has_tasks);
  EXPECT_EQ(back->interval_micros, 750'000);
  EXPECT_EQ(back->node_timeout_micros, 6'000'000);
  EXPECT_EQ(back->mig_geometry, "0=2x1g.10gb;1=7g.80gb");
  ASSERT_EQ(back->tasks.size(), 2u);
  const TaskAssignment& b = back->tasks[0];
  test_data::ExpectSameAssignment(b, a);
  // A whole device, not shared: no core limit, no runtime library, no distributed env.
  const TaskAssignment& w = back->tasks[1];
  EXPECT_EQ(w.spec.suspend_signal, "");  // none given: the agent's default
  p.mutable_tasks(0)->set_suspend_signal("SIGKILL");
  EXPECT_EQ(ReplyFromProto(p).status().code(), StatusCode::kInvalidArgument);
  p.mutable_tasks(0)->set_suspend_signal("SIGUSR2");
  EXPECT_EQ(w.action, TaskAssignment::Action::kRun);
  EXPECT_FALSE(w.spec.shares_device);
  EXPECT_EQ(w.spec.devices[0].core_percent, 0);
  EXPECT_FALSE(w.spec.distributed.has_value());

  p.mutable_tasks(0)->set_vendor("acme");
  EXPECT_EQ(ReplyFromProto(p).status().code(), StatusCode::kInvalidArgument);
  p.mutable_tasks(0)->set_vendor("nvidia");
  p.mutable_tasks(0)->set_action(static_cast<v1::TaskAssignment::Action>(7));
  EXPECT_EQ(ReplyFromProto(p).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace xpool::protocol
