#include "agent/http_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "model/node_builder.h"

namespace xpool::agent {
namespace {

using Json = nlohmann::json;

TEST(HeartbeatCodecTest, ParsesAssignments) {
  const char* body = R"({"heartbeat_interval_ms": 500, "tasks": [
    {"task_id": "job12-r1", "job_id": 12, "replica": 1, "restart_count": 2, "action": "run", "grace_s": 7,
     "command": ["python3", "train.py"], "workdir": "/w", "env": {"A": "1"}, "cpu_milli": 1500,
     "memory_mib": 2048, "devices": [{"index": 3, "memory_mib": 40960, "compute_milli": 500}],
     "distributed": {"master_addr": "h", "master_port": 29400, "world_size": 2, "rank": 1, "local_rank": 0}},
    {"task_id": "job13-r0", "action": "suspend"}, {"task_id": "job14-r0", "action": "stop"}]})";
  auto reply = protocol::ParseHeartbeatReply(body);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_TRUE(reply->has_tasks);
  EXPECT_EQ(reply->interval_micros, 500'000);
  ASSERT_EQ(reply->tasks.size(), 3u);
  const TaskAssignment& a = reply->tasks[0];
  EXPECT_EQ(a.action, TaskAssignment::Action::kRun);
  EXPECT_EQ(a.grace_micros, 7 * kMicrosPerSecond);
  EXPECT_EQ(a.spec.task_id, "job12-r1");
  EXPECT_EQ(a.spec.restart_count, 2);
  EXPECT_EQ(a.spec.argv, (std::vector<std::string>{"python3", "train.py"}));
  EXPECT_EQ(a.spec.env.at("A"), "1");
  EXPECT_EQ(a.spec.cpu_milli, 1500);
  ASSERT_EQ(a.spec.devices.size(), 1u);
  EXPECT_EQ(a.spec.devices[0].index, 3);
  EXPECT_EQ(a.spec.devices[0].core_percent, 50);
  EXPECT_TRUE(a.spec.shares_device);
  ASSERT_TRUE(a.spec.distributed.has_value());
  EXPECT_EQ(a.spec.distributed->rank, 1);
  EXPECT_EQ(reply->tasks[1].action, TaskAssignment::Action::kSuspend);
  EXPECT_EQ(reply->tasks[2].action, TaskAssignment::Action::kStop);
}

TEST(HeartbeatCodecTest, ReplyWithoutTasksLeavesTasksAlone) {
  auto reply = protocol::ParseHeartbeatReply(R"({"name": "n1", "ok": true})");
  ASSERT_TRUE(reply.ok());
  EXPECT_FALSE(reply->has_tasks);
}

TEST(HeartbeatCodecTest, BadRepliesAreErrors) {
  for (const char* bad : {"not json", "[1]", R"({"tasks": 3})", R"({"tasks": [{"action": "explode"}]})",
                          R"({"tasks": [{"command": "ls"}]})", R"({"tasks": [{"devices": [{"index": "x"}]}]})"}) {
    SCOPED_TRACE(bad);
    auto reply = protocol::ParseHeartbeatReply(bad);
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(HeartbeatCodecTest, BodiesCarryNodeAndTasks) {
  Node node = MakeNode("n1").WithGpus(2, "A100", 81920).Simulated().Build();
  Json reg = Json::parse(protocol::RegisterBody(node));
  EXPECT_EQ(reg["name"], "n1");
  EXPECT_EQ(reg["simulated"], true);
  EXPECT_EQ(reg["devices"].size(), 2u);
  EXPECT_EQ(reg["devices"][1]["memory"], "81920Mi");
  EXPECT_EQ(reg["devices"][1]["cores"], 1000);  // milli-devices, as the server's node JSON reads them
  EXPECT_EQ(reg["devices"][1]["mode"], "shared");
  TaskReport r;
  r.job_id = 12;
  r.status.task_id = "job12-r0";
  r.status.state = TaskState::kFailed;
  r.status.exit_code = 3;
  Json hb = Json::parse(protocol::HeartbeatBody(node, {r}));
  EXPECT_EQ(hb["tasks"][0]["state"], "failed");
  EXPECT_EQ(hb["tasks"][0]["exit_code"], 3);
  EXPECT_EQ(hb["devices"][1]["healthy"], true);
}

// A stand-in server on a free local port.
class HttpClientTest : public testing::Test {
 protected:
  void SetUp() override {
    server_.Post("/api/v1/nodes", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.get_header_value("Authorization") != "Bearer good") {
        res.status = 401;
        res.set_content(R"({"error": {"code": "UNAUTHENTICATED", "message": "bad token"}})", "application/json");
        return;
      }
      registered_ = req.body;
      res.status = 201;
      res.set_content("{}", "application/json");
    });
    server_.Post("/api/v1/nodes/n1/heartbeat", [this](const httplib::Request& req, httplib::Response& res) {
      heartbeat_ = req.body;
      res.set_content(R"({"tasks": [{"task_id": "job1-r0", "command": ["true"], "workdir": "/"}]})",
                      "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }
  HttpClientOptions Options(const std::string& token) {
    HttpClientOptions o;
    o.server_url = "http://127.0.0.1:" + std::to_string(port_);
    o.token = token;
    o.timeout_micros = 2 * kMicrosPerSecond;
    return o;
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::string registered_, heartbeat_;
};

TEST_F(HttpClientTest, RegistersAndHeartbeats) {
  HttpControlPlaneClient client(Options("good"));
  Node node = MakeNode("n1").WithGpus(1, "T4", 16384).Build();
  ASSERT_TRUE(client.Register(node).ok());
  EXPECT_EQ(Json::parse(registered_)["name"], "n1");
  auto reply = client.Heartbeat(node, {});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->tasks.size(), 1u);
  EXPECT_EQ(reply->tasks[0].spec.task_id, "job1-r0");
  EXPECT_EQ(Json::parse(heartbeat_)["tasks"].size(), 0u);
}

TEST_F(HttpClientTest, BadTokenIsUnauthenticated) {
  HttpControlPlaneClient client(Options("bad"));
  Status s = client.Register(MakeNode("n1").Build());
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(s.message().find("node token"), std::string::npos) << s.message();
}

TEST(HttpClientUnreachableTest, UnreachableServerIsUnavailable) {
  // A port nobody listens on: bind one, close it.
  httplib::Server probe;
  const int port = probe.bind_to_any_port("127.0.0.1");
  probe.stop();
  HttpClientOptions o;
  o.server_url = "http://127.0.0.1:" + std::to_string(port);
  o.timeout_micros = kMicrosPerSecond;
  HttpControlPlaneClient client(o);
  Status s = client.Register(MakeNode("n1").Build());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("cannot reach the server at http://127.0.0.1:"), std::string::npos) << s.message();

  HttpControlPlaneClient bad_url(HttpClientOptions{"not a url", "", kMicrosPerSecond});
  EXPECT_FALSE(bad_url.Register(MakeNode("n1").Build()).ok());
}

}  // namespace
}  // namespace xpool::agent
