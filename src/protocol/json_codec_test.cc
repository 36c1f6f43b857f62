#include "protocol/json_codec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/node_builder.h"
#include "protocol/testdata/sample_messages.h"

namespace xpool::protocol {
namespace {

using Json = nlohmann::json;

TEST(ProtocolTest, ReplyRoundTrips) {
  HeartbeatReply reply;
  reply.interval_micros = 750'000;
  TaskAssignment a = test_data::SampleSharedSuspend();
  reply.tasks = {a};
  auto back = ParseHeartbeatReply(HeartbeatReplyBody(reply));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->has_tasks);
  EXPECT_EQ(back->interval_micros, 750'000);
  ASSERT_EQ(back->tasks.size(), 1u);
  const TaskAssignment& b = back->tasks[0];
  test_data::ExpectSameAssignment(b, a);
  EXPECT_EQ(b.grace_micros, 1'500'000);  // grace_ms keeps sub-second graces

  // A whole device, not shared: no core limit, no runtime library.
  reply.tasks[0].spec.devices = {{0, 0, 0}};
  reply.tasks[0].spec.shares_device = false;
  back = ParseHeartbeatReply(HeartbeatReplyBody(reply));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->tasks[0].spec.shares_device);
  EXPECT_EQ(back->tasks[0].spec.devices[0].core_percent, 0);
}

TEST(ProtocolTest, SuspendSignalIsOptionalAndChecked) {
  HeartbeatReply reply;
  TaskAssignment a;
  a.spec.task_id = "job1-r0";
  a.spec.argv = {"true"};
  a.spec.workdir = "/w";
  reply.tasks = {a};
  Json body = Json::parse(HeartbeatReplyBody(reply));
  body["tasks"][0].erase("suspend_signal");  // an older server: the agent's default
  auto back = ParseHeartbeatReply(body.dump());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->tasks[0].spec.suspend_signal, "");
  body["tasks"][0]["suspend_signal"] = "SIGKILL";
  back = ParseHeartbeatReply(body.dump());
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("suspend_signal"), std::string::npos) << back.status().message();
}

TEST(ProtocolTest, NodeTimeoutIsOptional) {
  HeartbeatReply reply;
  reply.node_timeout_micros = 6'000'000;
  auto back = ParseHeartbeatReply(HeartbeatReplyBody(reply));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->node_timeout_micros, 6'000'000);
  reply.node_timeout_micros = 0;  // an older server: no lease, no fencing
  Json body = Json::parse(HeartbeatReplyBody(reply));
  EXPECT_FALSE(body.contains("node_timeout_ms"));
  EXPECT_EQ(ParseHeartbeatReply(body.dump())->node_timeout_micros, 0);
  body["node_timeout_ms"] = "soon";
  EXPECT_FALSE(ParseHeartbeatReply(body.dump()).ok());
}

TEST(ProtocolTest, MigGeometryIsOptional) {
  HeartbeatReply reply;
  reply.mig_geometry = "0=3g.40gb,3g.40gb";
  auto back = ParseHeartbeatReply(HeartbeatReplyBody(reply));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->mig_geometry, "0=3g.40gb,3g.40gb");
  reply.mig_geometry.clear();  // nothing to change, or an older server
  Json body = Json::parse(HeartbeatReplyBody(reply));
  EXPECT_FALSE(body.contains("mig_geometry"));
  EXPECT_EQ(ParseHeartbeatReply(body.dump())->mig_geometry, "");
  body["mig_geometry"] = 7;
  EXPECT_FALSE(ParseHeartbeatReply(body.dump()).ok());
}

TEST(ProtocolTest, ReplyWithoutTaskListSaysSo) {
  HeartbeatReply reply;
  reply.has_tasks = false;
  auto back = ParseHeartbeatReply(HeartbeatReplyBody(reply));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->has_tasks);
}

TEST(ProtocolTest, HeartbeatBodyRoundTripsWithLogChunk) {
  Node node = MakeNode("n1").WithGpus(2, "A100", 81920).Simulated().Build();
  const TaskReport r = test_data::SampleFailedReport();
  auto req = ParseHeartbeatBody(HeartbeatBody(node, {r}));
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  EXPECT_TRUE(req->has_tasks);
  ASSERT_EQ(req->device_health.size(), 2u);
  EXPECT_TRUE(req->device_health[1].second);
  ASSERT_EQ(req->tasks.size(), 1u);
  const TaskReport& b = req->tasks[0];
  test_data::ExpectSameReportButLog(b, r);
  EXPECT_EQ(b.log_data, r.log_data);
}

TEST(ProtocolTest, HeartbeatCarriesMeasuredUseAndOldBodiesHaveNone) {
  Node node = MakeNode("n1").WithGpus(2, "A100", 81920).Build();
  TaskReport r = test_data::SampleFailedReport();
  r.used_memory_mib = 4096;
  auto req = ParseHeartbeatBody(HeartbeatBody(node, {r}, {DeviceUsageSample{1, 20480, 625}}));
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  ASSERT_EQ(req->device_usage.size(), 1u);  // device 0 was not measured: not sent
  EXPECT_EQ(req->device_usage[0].index, 1);
  EXPECT_EQ(req->device_usage[0].used_memory_mib, 20480);
  EXPECT_EQ(req->device_usage[0].sm_permille, 625);
  EXPECT_EQ(req->tasks[0].used_memory_mib, 4096);

  // An agent that measures nothing (an older one) is still accepted.
  auto old = ParseHeartbeatBody(R"({"devices": [{"index": 0, "healthy": true}], "tasks": [{"task_id": "t1",
      "job_id": 1, "replica": 0, "state": "running"}]})");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_TRUE(old->device_usage.empty());
  EXPECT_EQ(old->tasks[0].used_memory_mib, -1);

  for (const char* body :
       {R"({"devices": [{"index": 0, "used_memory_mib": -1}]})", R"({"devices": [{"index": 0, "sm_permille": 1001}]})",
        R"({"devices": [{"index": 0, "sm_permille": 0.5}]})",
        R"({"tasks": [{"task_id": "t1", "state": "running", "used_memory_mib": -3}]})"}) {
    SCOPED_TRACE(body);
    EXPECT_EQ(ParseHeartbeatBody(body).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(ProtocolTest, BareHeartbeatHasNoTasks) {
  for (const char* body : {"", "  ", "{}"}) {
    SCOPED_TRACE(body);
    auto req = ParseHeartbeatBody(body);
    ASSERT_TRUE(req.ok());
    EXPECT_FALSE(req->has_tasks);
  }
  auto empty_list = ParseHeartbeatBody(R"({"tasks": []})");
  ASSERT_TRUE(empty_list.ok());
  EXPECT_TRUE(empty_list->has_tasks);  // an agent with no tasks: it still gets the wanted list
}

TEST(ProtocolTest, BadHeartbeatBodiesNameTheField) {
  struct Case {
    const char* body;
    const char* mentions;
  } cases[] = {
      {"nope", "not JSON"},
      {"[1]", "not a JSON object"},
      {R"({"tasks": 1})", "tasks is not a list"},
      {R"({"tasks": [{"state": "running"}]})", "tasks[0].task_id is required"},
      {R"({"tasks": [{"task_id": "a", "state": "dancing"}]})", "tasks[0].state"},
      {R"({"tasks": [{"task_id": "a", "job_id": "x"}]})", "tasks[0].job_id"},
      {R"({"tasks": [{"task_id": "a", "log": {"offset": -1, "data": "x"}}]})", "negative"},
      {R"({"devices": [{"healthy": 3}]})", "devices[0].healthy"},
      {R"({"tasks": [{"task_id": "a", "log_end": -2}]})", "tasks[0].log_end is negative"},
      {R"({"tasks": [{"task_id": "a", "log_end": "x"}]})", "tasks[0].log_end"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    auto req = ParseHeartbeatBody(c.body);
    ASSERT_FALSE(req.ok());
    EXPECT_EQ(req.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(req.status().message().find(c.mentions), std::string::npos) << req.status().message();
  }
  // Refused before a tree is built of it.
  auto deep = ParseHeartbeatBody("{\"tasks\": " + std::string(100000, '[') + "}");
  EXPECT_EQ(deep.status().message(), "heartbeat body nests deeper than 64 levels of [ and {");
}

TEST(ProtocolTest, SanitizeUtf8KeepsLengthAndHoldsAnIncompleteTail) {
  size_t n = 0;
  EXPECT_EQ(SanitizeUtf8("plain", false, &n), "plain");
  EXPECT_EQ(n, 5u);
  const std::string euro = "\xE2\x82\xAC";  // €
  EXPECT_EQ(SanitizeUtf8("a" + euro + "b", false, &n), "a" + euro + "b");
  EXPECT_EQ(SanitizeUtf8("a\xFF"
                         "b",
                         false, &n),
            "a?b");
  EXPECT_EQ(SanitizeUtf8("a\xC0\xAF", false, &n), "a??");  // overlong encoding
  // The first two bytes of € at the end: held back for the next read, or replaced when nothing follows.
  EXPECT_EQ(SanitizeUtf8("ab\xE2\x82", true, &n), "ab");
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(SanitizeUtf8("ab\xE2\x82", false, &n), "ab??");
  EXPECT_EQ(n, 4u);
  // Whatever comes out is valid JSON text.
  std::string junk;
  for (int i = 0; i < 256; ++i) junk += static_cast<char>(i);
  std::string clean = SanitizeUtf8(junk, false, &n);
  EXPECT_EQ(clean.size(), junk.size());
  EXPECT_NO_THROW((void)Json(clean).dump());
}

}  // namespace
}  // namespace xpool::protocol
