// AgentService's reading of task reports: how a replica ended is kept on its task record (an exit code, or the
// signal that killed it) and GET /jobs/{id} shows it with the node the replica ran on after the job ended; the
// placement's event names its devices; the suspending → suspended event says what the task did (checkpoint and
// exit 0, killed by its own suspend signal, stopped after its grace) and how much of its grace it used.
#include "server/agent_service.h"

#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "model/node_builder.h"
#include "server/api_test_fixture.h"
#include "store/testing/faulty_state_store.h"

namespace xpool::server {
namespace {

using nlohmann::json;

class AgentServiceTest : public ApiFixture {
 protected:
  AgentServiceTest() : ApiFixture("xpool_agent_service_test_") {}
  void SetUp() override {
    ApiFixture::SetUp();
    if (HasFatalFailure()) return;
    agents_ = std::make_unique<AgentService>(*control_, *jobs_);
    MakeApi(ApiOptions{});
    node_ = MakeNode("n1").WithCpu(8000).WithMemory(16384).WithGpus(1, "A100", 81920).Build();
    ASSERT_TRUE(agents_->Register(node_).ok());
  }
  void TearDown() override {
    agents_.reset();
    ApiFixture::TearDown();
  }

  // Submits `spec` (YAML) and runs a pass; returns the job id.
  int64_t SubmitAndPlace(const std::string& spec) {
    ApiResponse r = Call("POST", "/api/v1/jobs", admin_token_, spec);
    EXPECT_EQ(r.status, 201) << r.body;
    control_->RunPass(true);
    return Body(r)["id"].get<int64_t>();
  }
  protocol::TaskReport Report(int64_t id, protocol::TaskState state) {
    protocol::TaskReport r;
    r.job_id = id;
    r.status.task_id = "job" + std::to_string(id) + "-r0";
    r.status.state = state;
    r.status.started_at = clock_.NowMicros();
    return r;
  }
  void Beat(const protocol::TaskReport& r) { ASSERT_TRUE(agents_->Heartbeat(node_, {r}).ok()); }
  json Job(int64_t id) { return Body(Call("GET", "/api/v1/jobs/" + std::to_string(id), admin_token_)); }
  std::string LastEvent(int64_t id) {
    json events = Body(Call("GET", "/api/v1/jobs/" + std::to_string(id) + "/events", admin_token_))["events"];
    return events.empty() ? "" : events.back()["reason"].get<std::string>();
  }
  // Runs job `id`, asks it to suspend, then reports it ended `elapsed` later with `exit_code` / `signal`.
  std::string SuspendEnding(int64_t id, int exit_code, int signal, TimeMicros elapsed) {
    Beat(Report(id, protocol::TaskState::kRunning));
    EXPECT_TRUE(control_->Suspend(JobId(id)).ok());
    clock_.Advance(elapsed);
    protocol::TaskReport r = Report(id, protocol::TaskState::kSuspended);
    r.status.exit_code = exit_code;
    r.status.signal = signal;
    r.status.ended_at = clock_.NowMicros();
    Beat(r);
    return LastEvent(id);
  }

  std::unique_ptr<AgentService> agents_;
  Node node_;
};

constexpr const char* kSpec =
    "name: t\nresources: {gpu: 1, gpumem: 1Gi}\ncommand: sleep 100\ncheckpoint: {grace: 30}\n";

TEST_F(AgentServiceTest, ReplicasKeepTheirExitAndNodeAfterTheJobEnds) {
  const int64_t failed = SubmitAndPlace(kSpec);
  Beat(Report(failed, protocol::TaskState::kRunning));
  protocol::TaskReport r = Report(failed, protocol::TaskState::kFailed);
  r.status.signal = SIGKILL;
  Beat(r);
  json j = Job(failed);
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["state_reason"], "replica 0 was killed by signal 9 (SIGKILL)");
  ASSERT_EQ(j["tasks"].size(), 1u) << j.dump();
  EXPECT_EQ(j["tasks"][0]["node"], "n1");
  EXPECT_EQ(j["tasks"][0]["signal"], 9);
  EXPECT_TRUE(j["tasks"][0]["exit_code"].is_null());

  const int64_t exited = SubmitAndPlace(kSpec);
  Beat(Report(exited, protocol::TaskState::kRunning));
  r = Report(exited, protocol::TaskState::kFailed);
  r.status.exit_code = 3;
  Beat(r);
  j = Job(exited);
  EXPECT_EQ(j["tasks"][0]["exit_code"], 3);
  EXPECT_TRUE(j["tasks"][0]["signal"].is_null());
  EXPECT_EQ(j["tasks"][0]["node"], "n1");
  EXPECT_TRUE(j["placement"].empty());  // the allocation is gone; the task keeps where it ran
  // and the placement's event keeps which device, how much memory and compute.
  const std::string events = Call("GET", "/api/v1/jobs/" + std::to_string(exited) + "/events", admin_token_).body;
  const std::string uuid = node_.devices[0].uuid;
  EXPECT_NE(events.find("placed on n1 (replica 0: " + uuid + " 1.0 GiB 0%)"), std::string::npos) << events;
}

TEST_F(AgentServiceTest, SuspendEventsSayWhatTheTaskDid) {
  EXPECT_EQ(SuspendEnding(SubmitAndPlace(kSpec), 0, 0, 1'200'000),
            "checkpointed and exited 0 after 1.2 s (grace 30 s)");
  // No handler: the suspend signal itself ended the task at once — not "after its grace".
  EXPECT_EQ(SuspendEnding(SubmitAndPlace(kSpec), -1, SIGUSR1, 500'000),
            "killed by its suspend signal 10 (SIGUSR1) after 0.5 s of its 30 s grace; no checkpoint seen (the task "
            "has no handler for that signal)");
  EXPECT_EQ(SuspendEnding(SubmitAndPlace(kSpec), -1, SIGTERM, 30'100'000),
            "did not exit within its 30 s checkpoint grace: stopped by signal 15 (SIGTERM) after 30.1 s; no "
            "checkpoint seen");
  EXPECT_EQ(SuspendEnding(SubmitAndPlace(kSpec), 3, 0, 2'000'000),
            "exited with code 3 after 2.0 s when asked to suspend; no checkpoint seen (the contract is: checkpoint, "
            "then exit 0)");
}

TEST_F(AgentServiceTest, AReportTheStoreRefusesIsAppliedAtTheNextOne) {
  // The agent service writes through a store that fails on demand (a full disk, a lost database): the report of
  // a task's end must not be lost — the job keeps running until a later report of the same end is applied.
  FaultyStateStore faulty(*store_);
  MetricsRegistry metrics;
  AgentService::DeclareMetrics(metrics);
  AgentService agents(*control_, faulty, nullptr, &metrics);
  const int64_t id = SubmitAndPlace(kSpec);
  ASSERT_TRUE(agents.Heartbeat(node_, {Report(id, protocol::TaskState::kRunning)}).ok());
  ASSERT_EQ(Job(id)["state"], "running");

  protocol::TaskReport done = Report(id, protocol::TaskState::kSucceeded);
  done.status.exit_code = 0;
  done.status.ended_at = clock_.NowMicros();
  faulty.Fail("UpdateTask", UnavailableError("database is locked"));
  auto reply = agents.Heartbeat(node_, {done});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(faulty.refused("UpdateTask"), 1);
  EXPECT_EQ(Job(id)["state"], "running");  // nothing half-applied
  ASSERT_EQ(reply->tasks.size(), 1u);      // still wanted: the agent keeps reporting it
  EXPECT_NE(metrics.Render().find("xpool_agent_report_errors_total 1"), std::string::npos) << metrics.Render();

  faulty.Heal();
  ASSERT_TRUE(agents.Heartbeat(node_, {done}).ok());
  EXPECT_EQ(Job(id)["state"], "succeeded");
}

// Agents are asked to beat every quarter of the node timeout, at most every second (they report starts and exits
// and hear of changes without waiting for it); the HTTP fallback, which has no change feed, keeps 0.5 s.
TEST(HeartbeatIntervalTest, AQuarterOfTheNodeTimeoutAtMostASecond) {
  EXPECT_EQ(HeartbeatInterval(30 * kMicrosPerSecond), kMicrosPerSecond);
  EXPECT_EQ(HeartbeatInterval(2 * kMicrosPerSecond), kMicrosPerSecond / 2);
  EXPECT_EQ(HeartbeatInterval(kMicrosPerSecond), kMicrosPerSecond / 4);
  EXPECT_EQ(HeartbeatInterval(1000), kMicrosPerSecond / 20);
}

TEST_F(AgentServiceTest, TheReplyAsksForTheHeartbeatInterval) {
  auto reply = agents_->Heartbeat(node_, {});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->interval_micros, HeartbeatInterval(control_->node_timeout()));
}

TEST_F(AgentServiceTest, ARunningTasksRepeatedReportWritesNothing) {
  // Every heartbeat reports every running task; once its task record says so, the store sees no write for it (a
  // refused write would show here as a refusal and a report error).
  FaultyStateStore faulty(*store_);
  MetricsRegistry metrics;
  AgentService::DeclareMetrics(metrics);
  AgentService agents(*control_, faulty, nullptr, &metrics);
  const int64_t id = SubmitAndPlace(kSpec);
  const protocol::TaskReport running = Report(id, protocol::TaskState::kRunning);
  ASSERT_TRUE(agents.Heartbeat(node_, {running}).ok());
  ASSERT_EQ(Job(id)["state"], "running");

  faulty.Fail("UpdateTask", UnavailableError("no write expected"));
  for (int beat = 0; beat < 3; ++beat) {
    auto reply = agents.Heartbeat(node_, {running});
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_EQ(reply->tasks.size(), 1u);
  }
  EXPECT_EQ(faulty.refused("UpdateTask"), 0);
  EXPECT_NE(metrics.Render().find("xpool_agent_report_errors_total 0"), std::string::npos) << metrics.Render();

  // A report that changes the record is written (and refused here: the write was attempted).
  protocol::TaskReport done = Report(id, protocol::TaskState::kSucceeded);
  done.status.exit_code = 0;
  done.status.ended_at = clock_.NowMicros();
  ASSERT_TRUE(agents.Heartbeat(node_, {done}).ok());
  EXPECT_EQ(faulty.refused("UpdateTask"), 1);
  faulty.Heal();
  ASSERT_TRUE(agents.Heartbeat(node_, {done}).ok());
  EXPECT_EQ(Job(id)["state"], "succeeded");
}

}  // namespace
}  // namespace xpool::server
