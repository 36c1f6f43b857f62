// A remote agent end to end: the real `xpool server --agent-listen 127.0.0.1:P` and `xpool agent --server
// grpc://127.0.0.1:P --token-file F --simulate 4xA100-80GB` as separate processes, talking the agent protocol over
// gRPC, driven as a user would (REST + the CLI):
// - 8 one-GPU jobs at gpumem-percentage 50 all run at once, two per device; each task's env (printed to its log,
//   read back with `xpool logs`) carries its device and limits;
// - a job exiting 3 is failed; a command that does not exist fails with the exec error and the agent lives on;
//   cancel stops a running job's process;
// - the server restarts → the tasks keep running and `xpool logs` shows their output again (re-sent tails);
// - the agent stops (its tasks keep running) → at --node-timeout its tasks stop themselves (fencing), then its
//   node is lost and its jobs requeue; it starts again → it runs the requeued ones (restart 1);
// - an agent killed (SIGKILL) and restarted adopts its tasks: a running job goes on (same process, same restart
//   count) to succeed; a job that exited meanwhile is reported with its exit code.
// Bad input: a rejected token (the agent says so and retries; also through the HTTP fallback), a node token used
// for another node (PERMISSION_DENIED over gRPC, 403 over HTTP), an unreachable server (the agent says so and
// retries), another tenant's logs (404).
#include <gtest/gtest.h>
#include <httplib.h>

#include <csignal>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "support/rest_client.h"
#include "support/xpool_process.h"

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;
using xpool::testing::FreePort;
using xpool::testing::HalfGpuJob;
using xpool::testing::ProcessAlive;
using xpool::testing::ReadFile;
using xpool::testing::RestClient;
using xpool::testing::RunCli;
using xpool::testing::XpoolProcess;

constexpr const char* kNode = "e2e-agent-node";

class AgentE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xpool-agent-e2e-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "work");
    xpool::testing::LetTasksWrite(dir_);
    port_ = FreePort();
    url_ = "http://127.0.0.1:" + std::to_string(port_);
    agent_port_ = FreePort();
    while (agent_port_ == port_) agent_port_ = FreePort();
    agent_url_ = "grpc://127.0.0.1:" + std::to_string(agent_port_);
    std::vector<std::string> args = {"server",
                                     "--listen",
                                     "127.0.0.1:" + std::to_string(port_),
                                     "--state-dir",
                                     (dir_ / "var").string(),
                                     "--tick-ms",
                                     "200",
                                     "--agent-listen",
                                     "127.0.0.1:" + std::to_string(agent_port_)};
    // 10 s: long enough that a restarted server is not left by its agent on a loaded machine (the agent must have
    // a heartbeat answered within it, or its tasks stop themselves: fencing), short enough for the node-lost step.
    args.insert(args.end(), {"--node-timeout", "10"});
    server_args_ = args;
    ASSERT_TRUE(server_.Start(args, dir_ / "work", dir_ / "server.log"));
    ASSERT_TRUE(server_.WaitHealthy(port_, 30)) << server_.Log();
    token_ = ReadFile(dir_ / "var" / "admin.token");  // written before the server listens
    ASSERT_FALSE(token_.empty()) << server_.Log();
    rest_ = std::make_unique<RestClient>(port_, token_);
    rest_->set_diagnostics([this] { return "agent log:\n" + agent_.Log() + "\nserver log:\n" + server_.Log(); });
  }

  void TearDown() override {
    agent_.Stop();
    // The agent's tasks outlive it (under their shims): a drain stops what a test left running.
    int code = -1;
    RunCli({"agent", "--stop-tasks", "--grace", "1", "--state-dir", (dir_ / "agent").string()}, &code);
    server_.Stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::vector<std::string> Cli(std::vector<std::string> args) {
    args.insert(args.end(), {"--server", url_, "--token", token_});
    return args;
  }

  // A node token through the CLI, written to a file for the agent.
  fs::path NodeTokenFile(const std::string& node) {
    int code = -1;
    std::string out = RunCli(Cli({"tokens", "create", "--node", node}), &code, /*with_stderr=*/false);
    EXPECT_EQ(code, 0) << out;
    const std::string token = out.substr(0, out.find('\n'));
    EXPECT_EQ(token.rfind("xpn." + node + ".", 0), 0u) << out;
    const fs::path file = dir_ / (node + ".token");
    std::ofstream(file) << token << "\n";
    return file;
  }

  bool StartAgent(const fs::path& token_file, const std::string& server = "") {
    return agent_.Start({"agent", "--server", server.empty() ? agent_url_ : server, "--token-file", token_file.string(),
                         "--simulate", "4xA100-80GB", "--name", kNode, "--state-dir", (dir_ / "agent").string()},
                        dir_ / "work", dir_ / "agent.log");
  }

  bool WaitNodeReady(bool ready, int seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      Json n = rest_->Get(std::string("/api/v1/nodes/") + kNode);
      if (n.is_object() && n.value("ready", !ready) == ready) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // `xpool logs ID` until its output contains `text` (the agent ships output with its heartbeats).
  std::string LogsContaining(int64_t id, const std::string& text, int seconds = 10) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      int code = -1;
      out = RunCli(Cli({"logs", std::to_string(id)}), &code, /*with_stderr=*/false);
      if (code == 0 && out.find(text) != std::string::npos) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ADD_FAILURE() << "xpool logs " << id << " never showed \"" << text << "\": " << out;
    return out;
  }

  fs::path dir_;
  int port_ = 0, agent_port_ = 0;
  std::string url_, agent_url_;
  std::vector<std::string> server_args_;
  std::string token_;
  XpoolProcess server_, agent_;
  std::unique_ptr<RestClient> rest_;
};

// The value of NAME=... in an `env` dump; "" when absent.
std::string EnvValue(const std::string& dump, const std::string& name) {
  const size_t at = dump.find("\n" + name + "=");
  if (at == std::string::npos) return "";
  const size_t start = at + name.size() + 2;
  return dump.substr(start, dump.find('\n', start) - start);
}

TEST_F(AgentE2eTest, RemoteAgentRunsJobsShipsLogsAndSurvivesNodeLoss) {
  ASSERT_TRUE(StartAgent(NodeTokenFile(kNode)));
  ASSERT_TRUE(agent_.WaitForLog("registered with", 20)) << agent_.Log();
  Json node = rest_->Get(std::string("/api/v1/nodes/") + kNode);
  EXPECT_EQ(node["labels"].value("xpool.io/simulated", ""), "true") << node.dump();

  std::vector<int64_t> ids;
  for (int i = 0; i < 8; ++i) {
    const std::string pidfile = (dir_ / ("task" + std::to_string(i) + ".pid")).string();
    // The first one leaves a child behind in its group: cancel must stop it too.
    const std::string child = i == 0 ? "sleep 300 & echo $! > " + (dir_ / "child.pid").string() + "; " : "";
    ids.push_back(rest_->Submit(HalfGpuJob(
        "half-" + std::to_string(i),
        child + "echo $$ > " + pidfile + "; echo; env | sort; echo ENV-END; " + (i == 0 ? "wait" : "exec sleep 120"))));
  }
  std::map<std::string, int> per_device;
  for (int64_t id : ids) {
    Json j = rest_->WaitState(id, "running");
    ASSERT_EQ(j["placement"].size(), 1u) << j.dump();
    ASSERT_EQ(j["placement"][0]["devices"].size(), 1u) << j.dump();
    const std::string uuid = j["placement"][0]["devices"][0]["uuid"].get<std::string>();
    per_device[uuid]++;
    // Its env, read through `xpool logs`: its device (the uuid ends in the device's index) and its limits.
    const std::string env = "\n" + LogsContaining(id, "ENV-END");
    EXPECT_EQ(EnvValue(env, "CUDA_VISIBLE_DEVICES"), uuid.substr(uuid.rfind('-') + 1)) << env;
    EXPECT_EQ(EnvValue(env, "XPOOL_DEVICE_MEMORY_LIMIT_0"), "40960") << env;
    EXPECT_EQ(EnvValue(env, "XPOOL_JOB_ID"), std::to_string(id)) << env;
    EXPECT_EQ(EnvValue(env, "XPOOL_RESTART_COUNT"), "0") << env;
  }
  EXPECT_EQ(per_device.size(), 4u);
  for (const auto& [uuid, n] : per_device) EXPECT_EQ(n, 2) << uuid;
  std::vector<pid_t> pids;
  for (int i = 0; i < 8; ++i) {
    const fs::path pidfile = dir_ / ("task" + std::to_string(i) + ".pid");
    const std::string text = ReadFile(pidfile);
    ASSERT_FALSE(text.empty()) << pidfile;
    pids.push_back(static_cast<pid_t>(std::stol(text)));
    EXPECT_TRUE(ProcessAlive(pids.back())) << "task " << i << " is not running";
  }

  // Cancel stops the process; its half device goes to a job that exits 3 (failed), then to a command that does
  // not exist (failed with the exec error; the agent lives on).
  const int64_t exit3 = rest_->Submit(HalfGpuJob("exit3", "echo failing; exit 3"));
  auto r = rest_->http().Delete(("/api/v1/jobs/" + std::to_string(ids[0])).c_str(), rest_->Auth());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  bool gone = false;
  for (int k = 0; k < 100 && !gone; ++k) {
    gone = !ProcessAlive(pids[0]);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "the cancelled job's process still runs";
  const pid_t child = static_cast<pid_t>(std::stol("0" + ReadFile(dir_ / "child.pid")));
  ASSERT_GT(child, 0);
  for (int k = 0; k < 50 && ProcessAlive(child); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(ProcessAlive(child)) << "the cancelled job's child outlived it";
  Json failed = rest_->WaitState(exit3, "failed");
  EXPECT_NE(failed.value("state_reason", "").find("exited with code 3"), std::string::npos) << failed.dump();
  LogsContaining(exit3, "failing");
  // The command as an argv array (HalfGpuJob's resources, no shell).
  Json spec = HalfGpuJob("nocmd", "");
  spec["command"] = Json::array({"xpool-e2e-no-such-command", "--x"});
  const int64_t nocmd = rest_->Submit(spec);
  ASSERT_GT(nocmd, 0);
  failed = rest_->WaitState(nocmd, "failed");
  Json events = rest_->Get("/api/v1/jobs/" + std::to_string(nocmd) + "/events");
  EXPECT_NE(events.dump().find("command not found"), std::string::npos) << events.dump();
  EXPECT_TRUE(agent_.Alive()) << agent_.Log();

  // The server restarts: the agent reconnects, the running tasks are kept (same processes), nothing requeued.
  server_.Stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(server_.Start(server_args_, dir_ / "work", dir_ / "server.log"));
  EXPECT_TRUE(agent_.WaitForLog("connected again", 30)) << agent_.Log();
  for (size_t i = 1; i < ids.size(); ++i) {
    Json j = rest_->WaitState(ids[i], "running", 10);
    EXPECT_EQ(j.value("restart_count", -1), 0) << j.dump();
    EXPECT_TRUE(ProcessAlive(pids[i])) << "task " << i << " did not survive the server's restart";
  }
  // The restarted server lost its in-memory copy of the output; the agent re-sent each task's tail.
  LogsContaining(ids[1], "ENV-END");

  // The agent stops; its tasks keep running under their shims, until the node timeout: then they stop themselves
  // (fencing), before the server requeues their jobs (restart 1) at the node timeout plus its margin. The agent
  // starts again → it reports the fenced runs (refused: an earlier epoch) and runs restart 1, never both at once.
  agent_.Stop();
  EXPECT_TRUE(agent_.WaitForLog("keep running", 1)) << agent_.Log();
  for (size_t i = 1; i < pids.size(); ++i) EXPECT_TRUE(ProcessAlive(pids[i])) << "task " << i << " died with its agent";
  ASSERT_TRUE(WaitNodeReady(false, 20)) << server_.Log();
  for (size_t i = 1; i < ids.size(); ++i) {
    Json j = rest_->WaitState(ids[i], "queued", 20);
    EXPECT_GE(j.value("restart_count", 0), 1) << j.dump();
    EXPECT_FALSE(ProcessAlive(pids[i])) << "task " << i << " still runs after the server requeued its job";
  }
  EXPECT_NE(ReadFile(dir_ / "agent" / ("job" + std::to_string(ids[1]) + "-r0") / "output.log").find("fenced"),
            std::string::npos);
  ASSERT_TRUE(StartAgent(dir_ / (std::string(kNode) + ".token")));
  ASSERT_TRUE(WaitNodeReady(true, 15)) << agent_.Log();
  for (size_t i = 1; i < ids.size(); ++i) {
    Json j = rest_->WaitState(ids[i], "running", 20);
    EXPECT_GE(j.value("restart_count", 0), 1) << j.dump();
  }
  LogsContaining(ids[1], "XPOOL_RESTART_COUNT=1");  // the rerun's env, after the first run's output
}

// A restarted agent adopts its tasks: a job keeps running through an agent's SIGKILL and restart (the same process,
// its log keeps counting, restart count unchanged) and then succeeds; a job that exits while no agent runs is
// reported with its real exit code.
TEST_F(AgentE2eTest, RestartedAgentAdoptsItsTasks) {
  ASSERT_TRUE(StartAgent(NodeTokenFile(kNode)));
  ASSERT_TRUE(agent_.WaitForLog("registered with", 20)) << agent_.Log();
  const std::string finish = (dir_ / "finish").string(), go = (dir_ / "go").string();
  // Each waits for its file (at most ~60 s, so nothing outlives a failed test for long).
  const int64_t counter = rest_->Submit(HalfGpuJob("counter", "echo $$ > " + (dir_ / "counter.pid").string() +
                                                                  "; i=0; while [ ! -f " + finish +
                                                                  " ] && [ $i -lt 600 ]; do echo count $i; i=$((i+1)); "
                                                                  "sleep 0.1; done; echo done"));
  const int64_t exits =
      rest_->Submit(HalfGpuJob("exits7", "echo $$ > " + (dir_ / "exits.pid").string() + "; i=0; while [ ! -f " + go +
                                             " ] && [ $i -lt 600 ]; "
                                             "do i=$((i+1)); sleep 0.05; done; echo leaving; exit 7"));
  rest_->WaitState(counter, "running");
  rest_->WaitState(exits, "running");
  LogsContaining(counter, "count 3");
  const pid_t counter_pid = static_cast<pid_t>(std::stol("0" + ReadFile(dir_ / "counter.pid")));
  const pid_t exits_pid = static_cast<pid_t>(std::stol("0" + ReadFile(dir_ / "exits.pid")));
  ASSERT_GT(counter_pid, 0);
  ASSERT_GT(exits_pid, 0);

  agent_.Stop(SIGKILL);
  std::ofstream(go) << "go\n";  // exits 7 while no agent runs
  for (int k = 0; k < 50 && ProcessAlive(exits_pid); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(ProcessAlive(exits_pid));
  EXPECT_TRUE(ProcessAlive(counter_pid)) << "the task died with its agent";
  // Back well within the server's --node-timeout (10 s): the node is not lost, nothing is requeued.
  ASSERT_TRUE(StartAgent(dir_ / (std::string(kNode) + ".token")));
  EXPECT_TRUE(agent_.WaitForLog("adopted 1 running and 1 ended task(s)", 20)) << agent_.Log();
  Json failed = rest_->WaitState(exits, "failed");
  EXPECT_NE(failed.value("state_reason", "").find("exited with code 7"), std::string::npos) << failed.dump();
  EXPECT_EQ(failed.value("restart_count", -1), 0) << failed.dump();
  LogsContaining(exits, "leaving");
  Json running = rest_->Job(counter);
  EXPECT_EQ(running.value("state", ""), "running") << running.dump();
  EXPECT_EQ(running.value("restart_count", -1), 0) << running.dump();
  EXPECT_TRUE(ProcessAlive(counter_pid));
  // The same process keeps counting into the same log: later counts, and only one start.
  const std::string before = LogsContaining(counter, "count 3");
  const size_t last = before.rfind("count ");
  const int seen = std::stoi(before.substr(last + 6));
  const std::string later = "count " + std::to_string(seen + 5) + "\n";
  const std::string out = LogsContaining(counter, later, 20);
  size_t starts = 0;
  for (size_t at = out.find("[xpool] start:"); at != std::string::npos; at = out.find("[xpool] start:", at + 1))
    ++starts;
  EXPECT_EQ(starts, 1u) << out;
  std::ofstream(finish) << "finish\n";
  Json done = rest_->WaitState(counter, "succeeded");
  EXPECT_EQ(done.value("restart_count", -1), 0) << done.dump();
  LogsContaining(counter, "done");
}

TEST_F(AgentE2eTest, BadTokensUnreachableServerAndOtherTenantsLogs) {
  // A token the server rejects: the agent says so and keeps retrying.
  const fs::path bad = dir_ / "bad.token";
  std::ofstream(bad) << "xpt_not-a-real-token\n";
  ASSERT_TRUE(StartAgent(bad));
  EXPECT_TRUE(agent_.WaitForLog("rejected the node token", 10)) << agent_.Log();
  EXPECT_TRUE(agent_.WaitForLog("retrying", 1)) << agent_.Log();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_TRUE(agent_.Alive()) << agent_.Log();
  agent_.Stop();
  // The same through the HTTP fallback (the API's own port).
  ASSERT_TRUE(StartAgent(bad, url_));
  EXPECT_TRUE(agent_.WaitForLog("rejected the node token", 10)) << agent_.Log();
  agent_.Stop();

  // A node token acts only for its own node, and only on the agent routes.
  const fs::path other_file = NodeTokenFile("some-other-node");
  const std::string other = ReadFile(other_file);
  ASSERT_TRUE(StartAgent(other_file));
  EXPECT_TRUE(agent_.WaitForLog("this node token is for node some-other-node", 10)) << agent_.Log();
  EXPECT_TRUE(agent_.WaitForLog("may not act for node", 1)) << agent_.Log();
  agent_.Stop();
  auto r = rest_->Post(std::string("/api/v1/nodes/") + kNode + "/heartbeat", "{}", other);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(r->body.find("some-other-node"), std::string::npos) << r->body;
  r = rest_->http().Get("/api/v1/jobs", rest_->Auth(other));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;

  // An unreachable server: said clearly, retried.
  XpoolProcess lost;
  ASSERT_TRUE(lost.Start({"agent", "--server", "grpc://127.0.0.1:" + std::to_string(FreePort()), "--token", "x",
                          "--simulate", "1xA100-80GB", "--state-dir", (dir_ / "lost").string()},
                         dir_ / "work", dir_ / "lost.log"));
  EXPECT_TRUE(lost.WaitForLog("cannot reach the server", 10)) << lost.Log();
  EXPECT_TRUE(lost.Alive()) << lost.Log();
  lost.Stop();

  // Logs are tenant-scoped like every job route: another tenant's job is 404.
  int code = -1;
  std::string out = RunCli(Cli({"tenants", "create", "team-b"}), &code);
  ASSERT_EQ(code, 0) << out;
  out = RunCli(Cli({"tokens", "create", "--tenant", "team-b"}), &code, /*with_stderr=*/false);
  ASSERT_EQ(code, 0) << out;
  const std::string team_b = out.substr(0, out.find('\n'));
  const int64_t id = rest_->Submit(HalfGpuJob("admins", "echo secret"));
  r = rest_->http().Get(("/api/v1/jobs/" + std::to_string(id) + "/logs").c_str(), rest_->Auth(team_b));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
  r = rest_->http().Get(("/api/v1/jobs/" + std::to_string(id) + "/logs").c_str(), rest_->Auth());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = rest_->http().Get(("/api/v1/jobs/" + std::to_string(id) + "/logs?replica=3").c_str(), rest_->Auth());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
}

}  // namespace
