// Task isolation end to end (docs/agent.md, "Task identity"): run as root, the real `xpool server` + `xpool agent`
// (and `xpool up`) run each tenant's tasks as that tenant's uid. A probe job of one tenant prints its ids and tries
// to read what is not its own: the admin token, the server's database, the agent's state dir (listing), another
// tenant's log and work directory, /proc/<server pid>/environ and /proc/<agent pid>/environ — every one refused —,
// and its environment holds none of the server's variables (a secret is set in the server's environment here).
// Skipped when not root (tasks then run as the agent's user, as the docs say).
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/rest_client.h"
#include "support/xpool_process.h"

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;
using xpool::testing::FreePort;
using xpool::testing::ReadFile;
using xpool::testing::RestClient;
using xpool::testing::XpoolProcess;

constexpr const char* kSecret = "s3cr3t-server-env-value";

// "NAME" when `path` can be read (`read_cmd` PATH succeeds) as the task, else "DENIED-NAME".
std::string Try(const std::string& name, const std::string& read_cmd, const std::string& path) {
  return read_cmd + " '" + path + "' >/dev/null 2>&1 && echo READ-" + name + " || echo DENIED-" + name + "; ";
}

struct Paths {
  fs::path admin_token, database, agent_state, other_log, other_home;
  pid_t server_pid = 0, agent_pid = 0;
};

std::string ProbeCommand(const Paths& p) {
  return "echo IDS $(id -u) $(id -g) $(id -G); echo HOME=$HOME; echo PWD=$(pwd); " +
         Try("ADMIN-TOKEN", "cat", p.admin_token.string()) + Try("DATABASE", "cat", p.database.string()) +
         Try("STATE-DIR", "ls", p.agent_state.string()) + Try("OTHER-LOG", "cat", p.other_log.string()) +
         Try("OTHER-HOME", "ls", p.other_home.string()) +
         Try("SERVER-ENV", "cat", "/proc/" + std::to_string(p.server_pid) + "/environ") +
         Try("AGENT-ENV", "cat", "/proc/" + std::to_string(p.agent_pid) + "/environ") + "env | grep -q " + kSecret +
         " && echo ENV-HAS-SECRET || echo ENV-CLEAN; env | grep -q XPOOL_TOKEN && echo ENV-HAS-TOKEN; echo PROBE-END";
}

// The value after "KEY " / "KEY=" on the line that starts with it.
std::string Line(const std::string& out, const std::string& key) {
  const size_t at = out.find(key);
  if (at == std::string::npos) return "";
  const size_t end = out.find('\n', at);
  return out.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
}

class IsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: tasks run as their tenant's uid only when the agent is root";
    dir_ = xpool::testing::TempDir(std::string("isolation_") +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ::setenv("XPOOL_E2E_SERVER_SECRET", kSecret, 1);  // inherited by the server and the agent, never by tasks
  }
  void TearDown() override {
    ::unsetenv("XPOOL_E2E_SERVER_SECRET");
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Runs a victim job for tenant A (writes its output, then waits) and the probe for tenant B; checks the probe's
  // output (read from its log on disk: `log_of(job id)`) and the files' owners and modes.
  void ProbeAsTwoTenants(RestClient& rest, Paths paths, const std::function<fs::path(int64_t)>& log_of,
                         const std::function<fs::path(int64_t)>& home_of) {
    const std::string team_a = rest.TenantWithToken(Json{{"name", "team-a"}});
    const std::string team_b = rest.TenantWithToken(Json{{"name", "team-b"}});
    ASSERT_FALSE(team_a.empty() || team_b.empty());
    const int64_t victim = rest.Submit(
        xpool::testing::HalfGpuJob("victim", "echo IDS $(id -u); echo A-PRIVATE > private.txt; exec sleep 120"),
        team_a);
    rest.WaitState(victim, "running");
    for (int k = 0; k < 100 && ReadFile(log_of(victim)).find("IDS") == std::string::npos; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    paths.other_log = log_of(victim);
    paths.other_home = home_of(victim);
    for (const fs::path& p :
         {paths.admin_token, paths.database, paths.agent_state, paths.other_log, paths.other_home}) {
      ASSERT_TRUE(fs::exists(p)) << p << " must exist for its refusal to mean anything";
    }
    ASSERT_TRUE(xpool::testing::ProcessAlive(paths.server_pid));
    ASSERT_TRUE(xpool::testing::ProcessAlive(paths.agent_pid));
    const int64_t probe = rest.Submit(xpool::testing::HalfGpuJob("probe", ProbeCommand(paths)), team_b);
    rest.WaitState(probe, "succeeded");
    std::string out;
    for (int k = 0; k < 100 && out.find("PROBE-END") == std::string::npos; ++k) {
      out = ReadFile(log_of(probe));
      if (out.find("PROBE-END") == std::string::npos) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    SCOPED_TRACE(out);
    // Its own uid and gid from the range, no other group; another tenant's tasks have another uid.
    std::istringstream line(Line(out, "IDS "));
    std::vector<long> ids;
    for (long v; line >> v;) ids.push_back(v);
    ASSERT_EQ(ids.size(), 3u) << "uid, gid and one group (no supplementary groups)";
    const long uid = ids[0];
    EXPECT_GT(uid, 200000);
    EXPECT_LE(uid, 299999);
    EXPECT_EQ(ids[1], uid);
    EXPECT_EQ(ids[2], uid);
    const std::string victim_uid = Line(ReadFile(log_of(victim)), "IDS ");
    EXPECT_FALSE(victim_uid.empty());
    EXPECT_NE(victim_uid, std::to_string(uid)) << "two tenants share a uid";
    // HOME and the working directory: its own work dir, never the server's.
    EXPECT_EQ(Line(out, "HOME="), home_of(probe).string());
    EXPECT_EQ(Line(out, "PWD="), home_of(probe).string());
    for (const char* what :
         {"ADMIN-TOKEN", "DATABASE", "STATE-DIR", "OTHER-LOG", "OTHER-HOME", "SERVER-ENV", "AGENT-ENV"}) {
      EXPECT_NE(out.find(std::string("DENIED-") + what), std::string::npos) << what;
      EXPECT_EQ(out.find(std::string("READ-") + what), std::string::npos) << what << " was readable";
    }
    EXPECT_NE(out.find("ENV-CLEAN"), std::string::npos) << "the server's environment reached the task";
    EXPECT_EQ(out.find("ENV-HAS-TOKEN"), std::string::npos);
    // Owners and modes: the log the agent's own (0600), the work dir the task's (0700).
    struct stat st {};
    ASSERT_EQ(::stat(log_of(probe).c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat(home_of(probe).c_str(), &st), 0);
    EXPECT_EQ(static_cast<long>(st.st_uid), uid);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat((home_of(victim) / "private.txt").c_str(), &st), 0);  // the victim could write its own dir
    auto cancel = rest.http().Delete(("/api/v1/jobs/" + std::to_string(victim)).c_str(), rest.Auth(team_a));
    EXPECT_TRUE(cancel && cancel->status == 200);
  }

  fs::path dir_;
};

TEST_F(IsolationTest, ServerAndAgentTasksSeeOnlyTheirOwn) {
  const int port = FreePort();
  int agent_port = FreePort();
  while (agent_port == port) agent_port = FreePort();
  XpoolProcess server, agent;
  ASSERT_TRUE(
      server.Start({"server", "--listen", "127.0.0.1:" + std::to_string(port), "--state-dir", (dir_ / "var").string(),
                    "--tick-ms", "200", "--agent-listen", "127.0.0.1:" + std::to_string(agent_port)},
                   dir_, dir_ / "server.log"));
  ASSERT_TRUE(server.WaitHealthy(port, 30)) << server.Log();
  const std::string token = ReadFile(dir_ / "var" / "admin.token");
  ASSERT_FALSE(token.empty());
  ASSERT_TRUE(agent.Start({"agent", "--server", "grpc://127.0.0.1:" + std::to_string(agent_port), "--token-file",
                           (dir_ / "var" / "admin.token").string(), "--simulate", "2xA100-80GB", "--name", "iso-node",
                           "--state-dir", (dir_ / "agent").string()},
                          dir_, dir_ / "agent.log"));
  ASSERT_TRUE(agent.WaitForLog("registered with", 20)) << agent.Log();
  EXPECT_TRUE(agent.WaitForLog("each task runs as uid 200000 + its tenant's id", 1)) << agent.Log();
  RestClient rest(port, token);
  rest.set_diagnostics([&] { return "agent log:\n" + agent.Log() + "\nserver log:\n" + server.Log(); });
  Paths paths;
  paths.admin_token = dir_ / "var" / "admin.token";
  paths.database = dir_ / "var" / "xpool.db";
  paths.agent_state = dir_ / "agent";
  paths.server_pid = server.pid();
  paths.agent_pid = agent.pid();
  auto task = [](int64_t id) { return "job" + std::to_string(id) + "-r0"; };
  ProbeAsTwoTenants(
      rest, paths, [&](int64_t id) { return dir_ / "agent" / task(id) / "output.log"; },
      [&](int64_t id) { return dir_ / "agent" / task(id) / "work"; });
  agent.Stop();
  int code = -1;
  xpool::testing::RunCli({"agent", "--stop-tasks", "--grace", "1", "--state-dir", (dir_ / "agent").string()}, &code);
  server.Stop();
}

TEST_F(IsolationTest, UpTasksSeeOnlyTheirOwn) {
  xpool::testing::UpProcess up(dir_);
  ASSERT_TRUE(up.Start({"--simulate", "2xA100-80GB", "--node-name", "iso-up"})) << up.Log();
  RestClient rest(up.port(), up.token());
  rest.set_diagnostics([&] { return "log:\n" + up.Log(); });
  Paths paths;
  paths.admin_token = dir_ / "var" / "admin.token";
  paths.database = dir_ / "var" / "xpool.db";
  paths.agent_state = dir_ / "var" / "tasks";
  paths.server_pid = up.pid();
  paths.agent_pid = up.pid();  // one process: the server and its agent
  auto task = [](int64_t id) { return "job" + std::to_string(id) + "-r0"; };
  // The tasks' own directories are next to the state dir (STATE_DIR-tasks), which stays 0700.
  ProbeAsTwoTenants(
      rest, paths, [&](int64_t id) { return dir_ / "var" / "tasks" / task(id) / "output.log"; },
      [&](int64_t id) { return dir_ / "var-tasks" / task(id) / "work"; });
  up.Stop();
}

TEST_F(IsolationTest, BadUidRangesAreStartUpErrors) {
  struct Row {
    const char* range;
    const char* error;
  };
  const Row rows[] = {
      {"abc-5", "is not a number"}, {"abc", "must be FIRST-LAST"},    {"300-200", "FIRST must not be above LAST"},
      {"0-100", "is not in 1.."},   {"200000", "must be FIRST-LAST"}, {"0-0", "is not in 1.."},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.range);
    int code = -1;
    const std::string out =
        xpool::testing::RunCli({"agent", "--server", "grpc://127.0.0.1:1", "--token", "x", "--simulate", "1xA100-80GB",
                                "--state-dir", (dir_ / "agent").string(), "--task-uid-range", row.range},
                               &code);
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find("--task-uid-range"), std::string::npos) << out;
    EXPECT_NE(out.find(row.error), std::string::npos) << out;
  }
  // A range holding an account (root's group and user 0 are refused by the number check; uid 1 is daemon/bin on
  // Debian, and /etc/passwd always has some account below 65534).
  int code = -1;
  const std::string out =
      xpool::testing::RunCli({"agent", "--server", "grpc://127.0.0.1:1", "--token", "x", "--simulate", "1xA100-80GB",
                              "--state-dir", (dir_ / "agent").string(), "--task-uid-range", "1-65534"},
                             &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("holds the"), std::string::npos) << out;
  // A task root others cannot reach.
  fs::create_directories(dir_ / "private");
  fs::permissions(dir_ / "private", fs::perms::owner_all);
  const std::string unreachable =
      xpool::testing::RunCli({"agent", "--server", "grpc://127.0.0.1:1", "--token", "x", "--simulate", "1xA100-80GB",
                              "--state-dir", (dir_ / "agent").string(), "--task-root", (dir_ / "private/t").string()},
                             &code);
  EXPECT_EQ(code, 2) << unreachable;
  EXPECT_NE(unreachable.find("is mode 0700"), std::string::npos) << unreachable;
}

}  // namespace
