// The agent protocol over gRPC against a real Api + AgentService on a loopback port: the token checks (admin,
// the node's own node token, another node's token, a bad or missing token), register, a heartbeat answered with
// the wanted task, log chunks reaching the log relay, NOT_FOUND for a node the server does not know, and reports
// of tasks that are not the node's refused.
#include "server/agent_grpc_service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "agent/grpc_client.h"
#include "common/thread_priority.h"
#include "model/node_builder.h"
#include "protocol/log_relay.h"
#include "server/agent_service.h"
#include "server/api.h"
#include "server/api_test_fixture.h"
#include "store/token.h"

namespace xpool::server {
namespace {

using nlohmann::json;

class AgentGrpcTest : public ApiFixture {
 protected:
  AgentGrpcTest() : ApiFixture("xpool_agent_grpc_test_") {}
  void SetUp() override {
    ApiFixture::SetUp();
    if (HasFatalFailure()) return;
    AgentService::DeclareMetrics(metrics_);
    agents_ = std::make_unique<AgentService>(*control_, *jobs_, &logs_, &metrics_);
    ApiOptions options;
    options.agents = agents_.get();
    options.logs = &logs_;
    MakeApi(options);
    auto server = AgentGrpcServer::Start("127.0.0.1:0", *api_);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    grpc_ = std::move(*server);
    ASSERT_GT(grpc_->port(), 0);
  }
  void TearDown() override {
    grpc_.reset();
    api_.reset();
    agents_.reset();
    ApiFixture::TearDown();
  }

  agent::GrpcControlPlaneClient Client(const std::string& token) {
    return agent::GrpcControlPlaneClient({"127.0.0.1:" + std::to_string(grpc_->port()), token, 5 * kMicrosPerSecond});
  }
  // Submits (as admin) a job of one replica asking `gpus` GPUs that runs `command`; its id.
  int64_t SubmitGpuJob(int gpus = 1, const std::string& command = "sleep 100") {
    ApiResponse sub = Call(
        "POST", "/api/v1/jobs", admin_token_,
        json{{"name", "j"}, {"resources", {{"cpu", "100m"}, {"memory", "64Mi"}, {"gpu", gpus}}}, {"command", command}}
            .dump());
    EXPECT_EQ(sub.status, 201) << sub.body;
    return sub.status == 201 ? Body(sub)["id"].get<int64_t>() : -1;
  }

  std::unique_ptr<AgentService> agents_;
  protocol::LogRelay logs_;
  std::unique_ptr<AgentGrpcServer> grpc_;
};

TEST_F(AgentGrpcTest, TokensAreCheckedLikeTheHttpRoutes) {
  const Node n1 = MakeNode("n1").WithCpu(8000).WithMemory(16384).WithGpus(1, "A100", 81920).Simulated().Build();
  Status s = Client("").Register(n1);
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated) << s.ToString();
  EXPECT_NE(s.message().find("missing bearer token"), std::string::npos) << s.message();
  s = Client("xpt_not-a-token").Register(n1);
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated) << s.ToString();
  EXPECT_NE(s.message().find("rejected the node token"), std::string::npos) << s.message();

  const std::string other = NodeToken("n2");
  s = Client(other).Register(n1);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.ToString();
  EXPECT_NE(s.message().find("node n2, not n1"), std::string::npos) << s.message();
  EXPECT_EQ(Client(other).Heartbeat(n1, {}).status().code(), StatusCode::kPermissionDenied);

  // A tenant's (non-admin) token is not an agent's.
  s = Client(NewTenant("team")).Register(n1);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.ToString();

  // The node's own token: registered, agent-run (its simulated devices shown as a label).
  auto own = Client(NodeToken("n1"));
  ASSERT_TRUE(own.Register(n1).ok());
  EXPECT_TRUE(own.Connected());  // the channel stays up between calls
  auto view = control_->GetNode("n1");
  ASSERT_TRUE(view.ok());
  EXPECT_FALSE(view->node.simulated);
  EXPECT_EQ(view->node.labels.at("xpool.io/simulated"), "true");
  EXPECT_TRUE(own.Heartbeat(n1, {}).ok());
  // The admin token acts for any node; a node the server does not know is NOT_FOUND (the agent registers again).
  const Node n3 = MakeNode("n3").WithGpus(1, "A100", 81920).Build();
  EXPECT_EQ(Client(admin_token_).Heartbeat(n3, {}).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Client(admin_token_).Register(n3).ok());
  EXPECT_TRUE(Client(admin_token_).Heartbeat(n3, {}).ok());

  // Counted in the API's metrics like the HTTP routes.
  const std::string m = metrics_.Render();
  for (const char* want : {"route=\"/xpool.agent.v1.Agent/Register\",method=\"GRPC\",code=\"401\"} 2",
                           "route=\"/xpool.agent.v1.Agent/Register\",method=\"GRPC\",code=\"403\"} 2",
                           "route=\"/xpool.agent.v1.Agent/Heartbeat\",method=\"GRPC\",code=\"404\"} 1"}) {
    EXPECT_NE(m.find(want), std::string::npos) << want << "\n" << m;
  }
}

// gRPC agents hear of changes through WaitForChange and beat at the server's interval (1 s with the default node
// timeout); agents over the HTTP fallback have no change feed and are kept at 0.5 s.
TEST_F(AgentGrpcTest, PushedAgentsBeatEverySecondPollingOnesTwiceASecond) {
  const Node n1 = MakeNode("n1").WithCpu(8000).WithMemory(16384).WithGpus(1, "A100", 81920).Build();
  auto client = Client(NodeToken("n1"));
  ASSERT_TRUE(client.Register(n1).ok());
  auto reply = client.Heartbeat(n1, {});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->interval_micros, kMicrosPerSecond);
  ApiResponse http = Call("POST", "/api/v1/nodes/n1/heartbeat", NodeToken("n1"), R"({"tasks": []})");
  ASSERT_EQ(http.status, 200) << http.body;
  EXPECT_EQ(Body(http)["heartbeat_interval_ms"], 500) << http.body;
}

TEST_F(AgentGrpcTest, HeartbeatAnswersWithTheWantedTaskAndKeepsLogs) {
  const Node n1 = MakeNode("n1").WithCpu(8000).WithMemory(16384).WithGpus(1, "A100", 81920).Build();
  auto client = Client(NodeToken("n1"));
  ASSERT_TRUE(client.Register(n1).ok());
  ApiResponse sub =
      Call("POST", "/api/v1/jobs", admin_token_,
           json{{"name", "j"},
                {"resources", {{"cpu", "100m"}, {"memory", "64Mi"}, {"gpu", 1}, {"gpumem-percentage", 50}}},
                {"command", "echo hi"}}
               .dump());
  ASSERT_EQ(sub.status, 201) << sub.body;
  const int64_t id = Body(sub)["id"].get<int64_t>();
  control_->RunPass(/*full=*/true);
  auto reply = client.Heartbeat(n1, {});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->tasks.size(), 1u);
  const protocol::TaskAssignment& a = reply->tasks[0];
  EXPECT_EQ(a.action, protocol::TaskAssignment::Action::kRun);
  EXPECT_EQ(a.spec.job_id, id);
  EXPECT_EQ(a.spec.argv, (std::vector<std::string>{"/bin/sh", "-c", "echo hi"}));
  ASSERT_EQ(a.spec.devices.size(), 1u);
  EXPECT_EQ(a.spec.devices[0].memory_mib, 40960);
  EXPECT_TRUE(a.spec.shares_device);

  // The task reports running with output, then exits 3: the job fails with the code, its output is kept.
  protocol::TaskReport r;
  r.job_id = id;
  r.status.task_id = a.spec.task_id;
  r.status.state = protocol::TaskState::kRunning;
  r.status.started_at = clock_.NowMicros();
  r.log_data = "hi\n";
  ASSERT_TRUE(client.Heartbeat(n1, {r}).ok());
  auto slice = logs_.Read(a.spec.task_id, 0, 100);
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  EXPECT_EQ(slice->data, "hi\n");
  r.status.state = protocol::TaskState::kFailed;
  r.status.exit_code = 3;
  r.status.ended_at = clock_.NowMicros();
  r.log_offset = 3;
  r.log_data.clear();
  reply = client.Heartbeat(n1, {r});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_TRUE(reply->tasks.empty());  // no longer wanted: the agent's acknowledgement
  auto job = store_->GetJob(JobId(id));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state, JobState::kFailed);
}

// Fencing (docs/agent.md): each assignment carries the epoch, the tenant and the node timeout; a fenced report of
// the current epoch sends the job back to the queue (epoch + 1); a report of the earlier epoch is then refused —
// its state not applied, its log chunk not kept — and counted.
TEST_F(AgentGrpcTest, FencedRunRequeuesAndStaleReportsAreRefused) {
  const Node n1 = MakeNode("n1").WithCpu(8000).WithMemory(16384).WithGpus(1, "A100", 81920).Build();
  auto client = Client(NodeToken("n1"));
  ASSERT_TRUE(client.Register(n1).ok());
  const int64_t id = SubmitGpuJob();
  ASSERT_GT(id, 0);
  auto job = store_->GetJob(JobId(id));
  ASSERT_TRUE(job.ok());
  control_->RunPass(/*full=*/true);
  auto reply = client.Heartbeat(n1, {});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->node_timeout_micros, ControlPlaneOptions{}.node_timeout);
  ASSERT_EQ(reply->tasks.size(), 1u);
  const protocol::LaunchSpec spec = reply->tasks[0].spec;
  EXPECT_EQ(spec.restart_count, 0);
  EXPECT_EQ(spec.tenant_id, job->tenant.value());
  EXPECT_GT(spec.tenant_id, 0);
  EXPECT_EQ(spec.workdir, "");  // the task's own directory on the node, never the server's

  protocol::TaskReport r;
  r.job_id = id;
  r.status.task_id = spec.task_id;
  r.status.state = protocol::TaskState::kRunning;
  r.status.started_at = clock_.NowMicros();
  r.log_data = "run0\n";
  ASSERT_TRUE(client.Heartbeat(n1, {r}).ok());
  EXPECT_EQ(store_->GetJob(JobId(id))->state, JobState::kRunning);
  // Its shim fenced it (the agent had lost the server), and the agent reports it: the job runs again, epoch 1.
  r.status.state = protocol::TaskState::kStopped;
  r.status.signal = SIGTERM;
  r.status.fenced = true;
  r.log_offset = 5;
  r.log_data.clear();
  reply = client.Heartbeat(n1, {r});
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(reply->tasks.empty());
  job = store_->GetJob(JobId(id));
  EXPECT_EQ(job->state, JobState::kQueued);
  EXPECT_EQ(job->restart_count, 1);
  EXPECT_NE(job->state_reason.find("stopped itself"), std::string::npos) << job->state_reason;
  control_->RunPass(/*full=*/true);
  reply = client.Heartbeat(n1, {});
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(reply->tasks.size(), 1u);
  EXPECT_EQ(reply->tasks[0].spec.restart_count, 1);

  // A report of epoch 0 (say it ran on after all, with more output): refused and counted.
  r.status.state = protocol::TaskState::kFailed;
  r.status.fenced = false;
  r.status.exit_code = 1;
  r.log_data = "stale\n";
  ASSERT_TRUE(client.Heartbeat(n1, {r}).ok());
  job = store_->GetJob(JobId(id));
  EXPECT_EQ(job->state, JobState::kScheduled) << "a stale report changed the job";
  auto slice = logs_.Read(spec.task_id, 0, 100);
  ASSERT_TRUE(slice.ok());
  EXPECT_EQ(slice->data, "run0\n");
  EXPECT_NE(metrics_.Render().find("xpool_agent_stale_reports_total 1"), std::string::npos) << metrics_.Render();
}

// Node identity: a node's token may report only the tasks the server placed on that node. Node n2 forges a report
// of n1's task (failed, with a log line), one of an unknown job, and n1 one naming another task id or replica:
// each is refused — the job keeps running, nothing reaches its log — and counted.
TEST_F(AgentGrpcTest, ANodeMayReportOnlyItsOwnTasks) {
  const Node n1 = MakeNode("n1").WithCpu(8000).WithMemory(16384).WithGpus(1, "A100", 81920).Build();
  const Node n2 = MakeNode("n2").WithCpu(8000).WithMemory(16384).Build();  // no GPU: the job goes to n1
  auto c1 = Client(NodeToken("n1"));
  auto c2 = Client(NodeToken("n2"));
  ASSERT_TRUE(c1.Register(n1).ok());
  ASSERT_TRUE(c2.Register(n2).ok());
  const int64_t id = SubmitGpuJob();
  ASSERT_GT(id, 0);
  control_->RunPass(/*full=*/true);
  auto reply = c1.Heartbeat(n1, {});
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(reply->tasks.size(), 1u);
  const std::string task = reply->tasks[0].spec.task_id;
  protocol::TaskReport r;
  r.job_id = id;
  r.status.task_id = task;
  r.status.state = protocol::TaskState::kRunning;
  r.status.started_at = clock_.NowMicros();
  r.log_data = "real\n";
  ASSERT_TRUE(c1.Heartbeat(n1, {r}).ok());
  ASSERT_EQ(store_->GetJob(JobId(id))->state, JobState::kRunning);

  protocol::TaskReport forged = r;
  forged.status.state = protocol::TaskState::kFailed;
  forged.status.exit_code = 1;
  forged.status.ended_at = clock_.NowMicros();
  forged.log_offset = 5;
  forged.log_data = "forged by n2\n";
  reply = c2.Heartbeat(n2, {forged});
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(reply->tasks.empty());  // n2 is never handed n1's task
  protocol::TaskReport unknown = forged;
  unknown.job_id = 999;
  unknown.status.task_id = "job999-r0";
  ASSERT_TRUE(c2.Heartbeat(n2, {unknown}).ok());
  // n1 itself: its job's number with another task id (whose log it would write), or a replica the job lacks.
  protocol::TaskReport renamed = forged;
  renamed.status.task_id = "job" + std::to_string(id + 1) + "-r0";
  protocol::TaskReport other_replica = forged;
  other_replica.replica = 1;
  other_replica.status.task_id = "job" + std::to_string(id) + "-r1";
  ASSERT_TRUE(c1.Heartbeat(n1, {renamed, other_replica}).ok());

  EXPECT_EQ(store_->GetJob(JobId(id))->state, JobState::kRunning) << "a foreign report changed the job";
  auto slice = logs_.Read(task, 0, 100);
  ASSERT_TRUE(slice.ok());
  EXPECT_EQ(slice->data, "real\n");
  EXPECT_FALSE(logs_.Read("job999-r0", 0, 100).ok() && !logs_.Read("job999-r0", 0, 100)->data.empty());
  EXPECT_FALSE(logs_.Read(renamed.status.task_id, 0, 100).ok() &&
               !logs_.Read(renamed.status.task_id, 0, 100)->data.empty());
  EXPECT_NE(metrics_.Render().find("xpool_agent_foreign_reports_total 4"), std::string::npos) << metrics_.Render();

  // Its own node's report still counts: the job ends as n1 says.
  ASSERT_TRUE(c1.Heartbeat(n1, {forged}).ok());
  EXPECT_EQ(store_->GetJob(JobId(id))->state, JobState::kFailed);
}

// The logs route says `done` only when the job has ended and the server holds its whole log, up to the end the
// agent reported (the shim's exit line), not as soon as the job's state is terminal; a job that never ran is done
// when it ends.
TEST_F(AgentGrpcTest, LogsAreDoneOnlyWhenTheServerHoldsTheWholeLog) {
  const Node n1 = MakeNode("n1").WithCpu(8000).WithMemory(16384).WithGpus(1, "A100", 81920).Build();
  auto client = Client(NodeToken("n1"));
  ASSERT_TRUE(client.Register(n1).ok());
  const int64_t id = SubmitGpuJob(1, "x");
  ASSERT_GT(id, 0);
  const std::string logs = "/api/v1/jobs/" + std::to_string(id) + "/logs?offset=0";
  control_->RunPass(/*full=*/true);
  auto reply = client.Heartbeat(n1, {});
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(reply->tasks.size(), 1u);
  protocol::TaskReport r;
  r.job_id = id;
  r.status.task_id = reply->tasks[0].spec.task_id;
  r.status.state = protocol::TaskState::kSucceeded;
  r.status.exit_code = 0;
  r.status.started_at = clock_.NowMicros();
  r.status.ended_at = clock_.NowMicros();
  r.log_data = "part 1\n";  // the rest did not fit this heartbeat
  ASSERT_TRUE(client.Heartbeat(n1, {r}).ok());
  ASSERT_EQ(store_->GetJob(JobId(id))->state, JobState::kSucceeded);
  json body = Body(Call("GET", logs, admin_token_));
  EXPECT_EQ(body["data"], "part 1\n");
  EXPECT_FALSE(body.value("done", true)) << body.dump();  // ended, but the log's end is not known
  r.log_offset = 7;
  r.log_data = "part 2\n";
  r.log_end = 29;  // and an exit line still to come
  ASSERT_TRUE(client.Heartbeat(n1, {r}).ok());
  body = Body(Call("GET", logs, admin_token_));
  EXPECT_EQ(body["data"], "part 1\npart 2\n");
  EXPECT_FALSE(body.value("done", true)) << body.dump();
  r.log_offset = 14;
  r.log_data = "[xpool] exit 0\n";
  ASSERT_TRUE(client.Heartbeat(n1, {r}).ok());
  body = Body(Call("GET", logs, admin_token_));
  EXPECT_EQ(body["next_offset"], 29);
  EXPECT_TRUE(body.value("done", false)) << body.dump();
  // A read that stops short of the end is not done either.
  body = Body(Call("GET", logs + "&limit=5", admin_token_));
  EXPECT_FALSE(body.value("done", true)) << body.dump();

  // Never placed (it needs two GPUs), then cancelled: nothing will ever come, so done.
  const std::string other_id = std::to_string(SubmitGpuJob(2, "x"));
  ASSERT_EQ(Call("POST", "/api/v1/jobs/" + other_id + "/cancel", admin_token_).status, 200);
  body = Body(Call("GET", "/api/v1/jobs/" + other_id + "/logs", admin_token_));
  EXPECT_TRUE(body.value("done", false)) << body.dump();
}

// Push over gRPC: WaitForChange answers at once for a generation the agent has not seen, holds while nothing
// changes (ending at the client's deadline with `seen`), and answers as soon as a placement on the node commits;
// the token checks are Heartbeat's.
TEST_F(AgentGrpcTest, WaitForChangeAnswersWhenTheNodesTasksChange) {
  const Node n1 = MakeNode("n1").WithCpu(8000).WithMemory(16384).WithGpus(1, "A100", 81920).Build();
  auto client = Client(NodeToken("n1"));
  ASSERT_TRUE(client.Register(n1).ok());
  auto beat = client.Heartbeat(n1, {});
  ASSERT_TRUE(beat.ok());
  const int64_t seen = beat->generation;
  EXPECT_GT(seen, 0);
  auto stale = client.WaitForChange(n1, seen - 1, 5 * kMicrosPerSecond);
  ASSERT_TRUE(stale.ok()) << stale.status().ToString();
  EXPECT_EQ(*stale, seen);
  auto quiet = client.WaitForChange(n1, seen, 200'000);
  ASSERT_TRUE(quiet.ok()) << quiet.status().ToString();
  EXPECT_EQ(*quiet, seen);

  std::thread submit([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    SubmitGpuJob(1, "sleep 1");
    control_->RunPass(/*full=*/true);
  });
  const auto start = std::chrono::steady_clock::now();
  auto changed = client.WaitForChange(n1, seen, 20 * kMicrosPerSecond);
  submit.join();
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_NE(*changed, seen);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  beat = client.Heartbeat(n1, {});
  ASSERT_TRUE(beat.ok());
  EXPECT_EQ(beat->generation, *changed);
  ASSERT_EQ(beat->tasks.size(), 1u);  // what the change announced

  EXPECT_EQ(Client(NodeToken("n2")).WaitForChange(n1, seen, 1'000'000).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(Client("").WaitForChange(n1, seen, 1'000'000).status().code(), StatusCode::kUnauthenticated);
  // Nothing left subscribed (the server learns of a deadline asynchronously: allow it a moment).
  for (int i = 0; i < 200 && control_->changes().waiting() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(control_->changes().waiting(), 0u);
}

// This process's threads whose nice value is `nice` (/proc/self/task/*/stat, field 19).
int ThreadsAtNice(int nice) {
  int count = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t comm_end = stat.rfind(')');
    if (comm_end == std::string::npos) continue;
    std::istringstream fields(stat.substr(comm_end + 2));  // from field 3 (state) on
    std::string field;
    for (int i = 3; i <= 19 && fields >> field; ++i) {
      if (i == 19 && std::stoi(field) == nice) ++count;
    }
  }
  return count;
}

TEST_F(AgentGrpcTest, AgentCallsRunAtTheNiceValueGivenAndTheCallerKeepsItsOwn) {
  const int base = ThisThreadNice();
  if (base > 12) GTEST_SKIP() << "this test runs at nice " << base;
  const int before = ThreadsAtNice(base + 6);
  auto niced = AgentGrpcServer::Start("127.0.0.1:0", *api_, base + 6);
  ASSERT_TRUE(niced.ok()) << niced.status().ToString();
  EXPECT_GE(ThreadsAtNice(base + 6) - before, 4);  // at least the call pool's threads
  EXPECT_EQ(ThisThreadNice(), base);
  // And it serves: a node registers through it.
  agent::GrpcControlPlaneClient client(
      {"127.0.0.1:" + std::to_string((*niced)->port()), admin_token_, 5 * kMicrosPerSecond});
  const Node n1 = MakeNode("n1").WithCpu(8000).WithMemory(16384).WithGpus(1, "A100", 81920).Simulated().Build();
  EXPECT_TRUE(client.Register(n1).ok());

  auto refused = AgentGrpcServer::Start("127.0.0.1:0", *api_, 20);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("--agent-nice"), std::string::npos) << refused.status().ToString();
}

}  // namespace
}  // namespace xpool::server
