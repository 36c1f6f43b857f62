// Fencing end to end (docs/agent.md, "Fencing"): the real `xpool server --node-timeout 2` and two `xpool agent`
// processes. A job runs on agent A; A is frozen (SIGSTOP) past the node timeout while agent B is up. Every 0.5 s
// the test counts the job's live processes (by a variable of the job's env in /proc/<pid>/environ, not by timing) and
// asserts at most one at every sample, through A's task stopping itself and the job's requeue onto B. Then A is thawed
// (SIGCONT): its stale report is refused (xpool_agent_stale_reports_total), and the job goes on on B untouched.
#include <gtest/gtest.h>
#include <httplib.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/rest_client.h"
#include "support/xpool_process.h"

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;
using xpool::testing::FreePort;
using xpool::testing::ReadFile;
using xpool::testing::RestClient;
using xpool::testing::XpoolProcess;

// The live processes whose environment holds `marker` (KEY=VALUE; a zombie's environ reads empty: not counted).
std::vector<pid_t> JobProcesses(const std::string& marker) {
  const std::string& needle = marker;
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = 0;
    for (size_t start = 0; start < env.size(); start = at + 1) {
      at = env.find('\0', start);
      if (at == std::string::npos) at = env.size();
      if (env.compare(start, at - start, needle) == 0) {
        out.push_back(static_cast<pid_t>(std::stol(name)));
        break;
      }
    }
  }
  return out;
}

double StaleReports(int port) {
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get("/metrics");
  if (!r || r->status != 200) return -1;
  const std::string key = "xpool_agent_stale_reports_total";
  size_t at = r->body.find("\n" + key);
  if (at == std::string::npos) return -1;
  at = r->body.find(' ', at + 1);
  return at == std::string::npos ? -1 : std::stod(r->body.substr(at + 1));
}

class FencingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = xpool::testing::TempDir("fencing");
    port_ = FreePort();
    agent_port_ = FreePort();
    while (agent_port_ == port_) agent_port_ = FreePort();
    ASSERT_TRUE(server_.Start(
        {"server", "--listen", "127.0.0.1:" + std::to_string(port_), "--state-dir", (dir_ / "var").string(),
         "--tick-ms", "200", "--node-timeout", "2", "--agent-listen", "127.0.0.1:" + std::to_string(agent_port_)},
        dir_, dir_ / "server.log"));
    ASSERT_TRUE(server_.WaitHealthy(port_, 30)) << server_.Log();
    rest_ = std::make_unique<RestClient>(port_, ReadFile(dir_ / "var" / "admin.token"));
    rest_->set_diagnostics(
        [this] { return "agent a:\n" + a_.Log() + "\nagent b:\n" + b_.Log() + "\nserver:\n" + server_.Log(); });
  }
  void TearDown() override {
    if (a_.pid() > 0) ::kill(a_.pid(), SIGCONT);
    a_.Stop();
    b_.Stop();
    for (const char* agent : {"a", "b"}) {
      int code = -1;
      xpool::testing::RunCli({"agent", "--stop-tasks", "--grace", "1", "--state-dir", (dir_ / agent).string()}, &code);
    }
    server_.Stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  bool StartAgent(XpoolProcess& p, const std::string& name) {
    return p.Start({"agent", "--server", "grpc://127.0.0.1:" + std::to_string(agent_port_), "--token-file",
                    (dir_ / "var" / "admin.token").string(), "--simulate", "1xA100-80GB", "--name", name, "--state-dir",
                    (dir_ / name.substr(name.size() - 1)).string()},
                   dir_, dir_ / (name + ".log"));
  }

  fs::path dir_;
  int port_ = 0, agent_port_ = 0;
  XpoolProcess server_, a_, b_;
  std::unique_ptr<RestClient> rest_;
};

TEST_F(FencingTest, AFrozenAgentsJobNeverHasTwoLiveRuns) {
  ASSERT_TRUE(StartAgent(a_, "node-a"));
  ASSERT_TRUE(a_.WaitForLog("registered with", 20)) << a_.Log();
  // The job's own variable marks its processes (job ids repeat across servers on one machine; this dir does not).
  Json spec = xpool::testing::HalfGpuJob("fenced", "exec sleep 300");
  spec["env"] = Json{{"E2E_FENCE_MARK", dir_.string()}};
  const std::string mark = "E2E_FENCE_MARK=" + dir_.string();
  const int64_t id = rest_->Submit(spec);
  Json j = rest_->WaitState(id, "running");
  ASSERT_EQ(j["placement"][0].value("node", ""), "node-a") << j.dump();
  std::vector<pid_t> first;
  for (int k = 0; k < 50 && first.empty(); ++k) {
    first = JobProcesses(mark);
    if (first.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(StartAgent(b_, "node-b"));
  ASSERT_TRUE(b_.WaitForLog("registered with", 20)) << b_.Log();
  EXPECT_EQ(StaleReports(port_), 0);

  // Freeze A (the agent only: its task runs on under its shim) and sample until the job runs on B, and on.
  ASSERT_EQ(::kill(a_.pid(), SIGSTOP), 0);
  int samples = 0, after_move = 0;
  pid_t second = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (after_move < 6 && std::chrono::steady_clock::now() < deadline) {
    const std::vector<pid_t> live = JobProcesses(mark);
    ++samples;
    ASSERT_LE(live.size(), 1u) << "sample " << samples << ": the job has " << live.size() << " live runs (pids "
                               << live[0] << ", " << live[1] << ")";
    if (live.size() == 1 && live[0] != first[0]) {
      second = live[0];
      ++after_move;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_NE(second, 0) << "the job never ran again elsewhere";
  j = rest_->Job(id);
  EXPECT_EQ(j.value("state", ""), "running") << j.dump();
  EXPECT_EQ(j.value("restart_count", 0), 1) << j.dump();
  EXPECT_EQ(j["placement"][0].value("node", ""), "node-b") << j.dump();
  EXPECT_NE(ReadFile(dir_ / "a" / ("job" + std::to_string(id) + "-r0") / "output.log").find("fenced"),
            std::string::npos)
      << "A's run was not stopped by its shim";

  // Thaw A: its report of the old run (epoch 0) is refused; the job's run on B goes on.
  ASSERT_EQ(::kill(a_.pid(), SIGCONT), 0);
  double refused = 0;
  for (int k = 0; k < 100 && (refused = StaleReports(port_)) < 1; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(refused, 1) << server_.Log();
  for (int k = 0; k < 4; ++k) {
    const std::vector<pid_t> live = JobProcesses(mark);
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0], second);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  j = rest_->Job(id);
  EXPECT_EQ(j.value("state", ""), "running") << j.dump();
  EXPECT_EQ(j.value("restart_count", 0), 1) << j.dump();
  EXPECT_NE(server_.Log().find("refused a report of task job" + std::to_string(id) + "-r0 from node node-a"),
            std::string::npos)
      << server_.Log();
}

}  // namespace
