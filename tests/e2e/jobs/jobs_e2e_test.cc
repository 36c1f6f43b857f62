// Jobs as real users run them (issue 20), end to end on the real binaries, over REST and the CLI:
// - `xpool up` on a simulated 2xA100-80GB node:
//   - a whole GPU means a whole GPU: three `gpu: 1` jobs, two run, the third waits for a device;
//   - preemption that converges: a `gpu: 2` high-priority job against two `gpu: 1` low-priority ones: both are
//     suspended once, in one decision, and the high job runs after one grace (no victim placed back in between);
//   - retries: a job failing twice then succeeding with `retries: 3` (events "retry 1 of 3 in 1 s after exit
//     code 1", ...), one failing for good "(after 1 retry)"; bad input (retries -1, an image name with a space)
//     is 400 naming the field and stores nothing;
//   - runtime environments: `image:` runs the command through podman (a stand-in `podman` on the job's PATH prints
//     the exact command line); with no podman the job fails saying it can never run there;
//   - logs that last: after `xpool up` restarts, `xpool logs` shows a finished job's whole output, `--tail 2` its
//     last two lines (the task's last and the launcher's exit line).
// - `xpool server` and two `xpool agent --simulate 1xA100-80GB` processes (each its own state dir) on this machine:
//   - distributed launch: a 2-replica job runs torch.distributed (gloo, CPU) init_process_group + all_reduce
//     with Debian's python3-torch, one replica per node; both logs show the reduced value and the ranks;
//   - `xpool logs -f` started before a server restart follows the running job across it, every line once.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/rest_client.h"
#include "support/xpool_process.h"

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;
using xpool::testing::FreePort;
using xpool::testing::ReadFile;
using xpool::testing::RestClient;
using xpool::testing::RunCli;
using xpool::testing::UpProcess;
using xpool::testing::XpoolProcess;

// How many of the job's events have `kind` (and, when given, a reason containing `text`).
int CountEvents(const std::string& events_json, const std::string& kind, const std::string& text = "") {
  const Json e = Json::parse(events_json, nullptr, false);
  if (!e.is_object() || !e.contains("events")) return -1;
  int n = 0;
  for (const Json& ev : e["events"]) {
    if (ev.value("kind", "") == kind && ev.value("reason", "").find(text) != std::string::npos) ++n;
  }
  return n;
}

Json ShellJob(const std::string& name, const std::string& command, Json resources = {{"cpu", "100m"}}) {
  return Json{{"name", name}, {"resources", std::move(resources)}, {"command", command}};
}

class UpJobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        xpool::testing::TempDir(std::string("jobs_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    Up();
  }
  void TearDown() override {
    up_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // (Re)starts `xpool up` in dir_ (the previous run's log kept as up.N.log, so the new hint is the one read).
  void Up() {
    if (up_) {
      up_.reset();
      fs::rename(dir_ / "up.log", dir_ / ("up." + std::to_string(++runs_) + ".log"));
    }
    up_ = std::make_unique<UpProcess>(dir_);
    ASSERT_TRUE(up_->Start({"--simulate", "2xA100-80GB", "--node-name", "jobs-node", "--min-runtime", "0"}))
        << up_->Log();
    rest_ = std::make_unique<RestClient>(up_->port(), up_->token());
    rest_->set_default_wait_seconds(30);
    rest_->set_diagnostics([this] { return "log:\n" + up_->Log(); });
  }
  std::vector<std::string> Cli(std::vector<std::string> args) {
    args.insert(args.end(), {"--server", up_->url(), "--token", up_->token()});
    return args;
  }
  int64_t JobCount() {
    Json jobs = rest_->Get("/api/v1/jobs");
    return jobs.is_object() && jobs.contains("jobs") ? static_cast<int64_t>(jobs["jobs"].size()) : -1;
  }

  fs::path dir_;
  int runs_ = 0;
  std::unique_ptr<UpProcess> up_;
  std::unique_ptr<RestClient> rest_;
};

TEST_F(UpJobsTest, AWholeGpuMeansAWholeGpu) {
  const Json gpu = {{"cpu", "100m"}, {"memory", "64Mi"}, {"gpu", 1}};
  const int64_t a = rest_->Submit(ShellJob("whole-a", "sleep 30", gpu));
  const int64_t b = rest_->Submit(ShellJob("whole-b", "sleep 30", gpu));
  const int64_t c = rest_->Submit(ShellJob("whole-c", "sleep 30", gpu));
  rest_->WaitState(a, "running");
  rest_->WaitState(b, "running");
  // Each holds its device's whole memory and compute: the third waits, with the reason.
  Json waiting = rest_->WaitFor(c, "waiting with a reason", [](const Json& j) {
    return j.value("state", "") == "queued" && !j.value("reason", "").empty();
  });
  EXPECT_EQ(waiting.value("state", ""), "queued") << waiting.dump();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // a few more passes: still waiting
  EXPECT_EQ(rest_->Job(c).value("state", ""), "queued");
  for (int64_t id : {a, b, c}) rest_->Post("/api/v1/jobs/" + std::to_string(id) + "/cancel");
}

TEST_F(UpJobsTest, TwoVictimsAreSuspendedOnceAndTheHighJobRunsAfterOneGrace) {
  // Low jobs that checkpoint (exit 0) on their suspend signal.
  auto low = [](const std::string& name) {
    Json j = ShellJob(name, "trap 'echo checkpoint; exit 0' USR1; echo started; while :; do sleep 0.1; done",
                      {{"cpu", "100m"}, {"memory", "64Mi"}, {"gpu", 1}});
    j["priority"] = "low";
    j["preemptible"] = true;
    j["checkpoint"] = {{"grace", 3}};
    return j;
  };
  const int64_t low1 = rest_->Submit(low("low-one"));
  rest_->WaitState(low1, "running");
  const int64_t low2 = rest_->Submit(low("low-two"));
  rest_->WaitState(low2, "running");
  Json high = ShellJob("high-two", "echo ran; sleep 2", {{"cpu", "100m"}, {"memory", "64Mi"}, {"gpu", 2}});
  high["priority"] = "high";
  const auto submitted = std::chrono::steady_clock::now();
  const int64_t h = rest_->Submit(high);
  rest_->WaitFor(h, "running", [](const Json& j) {
    const std::string s = j.value("state", "");
    return s == "running" || s == "succeeded";
  });
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count();
  EXPECT_LT(waited, 3 + 5) << "one grace (3 s) plus passes and heartbeats";
  rest_->WaitState(h, "succeeded");
  // One decision naming both victims; each victim suspended once, for this job.
  const std::string events = rest_->Events(h);
  EXPECT_EQ(CountEvents(events, "preempt"), 1) << events;
  const std::string for_high = "suspended for job " + std::to_string(h);
  int suspensions = 0;
  for (int64_t v : {low1, low2}) {
    const std::string ev = rest_->Events(v);
    const int n = CountEvents(ev, "transition", for_high);
    EXPECT_EQ(n, 1) << ev;
    suspensions += n;
  }
  EXPECT_EQ(suspensions, 2);
  // The low jobs run again afterwards, restarted once.
  for (int64_t v : {low1, low2}) {
    rest_->WaitFor(v, "running again",
                   [](const Json& j) { return j.value("state", "") == "running" && j.value("restart_count", 0) == 1; });
    rest_->Post("/api/v1/jobs/" + std::to_string(v) + "/cancel");
  }
}

TEST_F(UpJobsTest, RetriesWithBackoffAndBadInputChangesNothing) {
  // Fails on its first two runs (restart 0 and 1), succeeds on the third.
  Json flaky = ShellJob("flaky", "echo run $XPOOL_RESTART_COUNT; test $XPOOL_RESTART_COUNT -ge 2 || exit 1");
  flaky["retries"] = 3;
  flaky["retry-backoff"] = 1;
  const int64_t f = rest_->Submit(flaky);
  Json done = rest_->WaitState(f, "succeeded");
  EXPECT_EQ(done.value("restart_count", -1), 2) << done.dump();
  const std::string events = rest_->Events(f);
  EXPECT_EQ(CountEvents(events, "retry", "retry 1 of 3 in 1 s after exit code 1"), 1) << events;
  EXPECT_EQ(CountEvents(events, "retry", "retry 2 of 3 in 2 s after exit code 1"), 1) << events;
  EXPECT_EQ(CountEvents(events, "retry"), 2) << events;

  Json doomed = ShellJob("doomed", "exit 4");
  doomed["retries"] = 1;
  doomed["retry-backoff"] = 1;
  const int64_t d = rest_->Submit(doomed);
  Json failed = rest_->WaitState(d, "failed");
  EXPECT_NE(failed.dump().find("replica 0 exited with code 4 (after 1 retry)"), std::string::npos) << failed.dump();

  const int64_t before = JobCount();
  struct Bad {
    const char* field;
    Json value;
    const char* error;
  };
  const Bad bads[] = {{"retries", -1, "retries must be 0..10"},
                      {"retries", 11, "retries must be 0..10"},
                      {"image", "python 3.12", "not one with a space"},
                      {"retry-backoff", "2h", "retry-backoff must be 1..3600 seconds"}};
  for (const Bad& b : bads) {
    Json bad = ShellJob("bad", "true");
    bad[b.field] = b.value;
    auto r = rest_->Post("/api/v1/jobs", bad.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << b.field << ": " << r->body;
    EXPECT_NE(r->body.find(b.error), std::string::npos) << r->body;
  }
  EXPECT_EQ(JobCount(), before) << "a refused spec stores nothing";
}

TEST_F(UpJobsTest, AnImageRunsThroughPodmanOrCanNeverRunHere) {
  const fs::path bin = dir_ / "bin";
  fs::create_directories(bin);
  std::ofstream(bin / "podman") << "#!/bin/sh\necho podman \"$@\"\n";
  // Executable by the task's uid too (an agent running as root runs tasks as their tenant's uid).
  const fs::perms everyone = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(bin, everyone);
  fs::permissions(bin / "podman", everyone);
  Json boxed = ShellJob("boxed", "echo inside");
  boxed["image"] = "localhost/team/train:v1";
  boxed["env"] = {{"PATH", bin.string()}, {"TOKEN", "s3cr3t"}};
  const int64_t b = rest_->Submit(boxed);
  rest_->WaitState(b, "succeeded");
  int code = -1;
  const std::string out = RunCli(Cli({"logs", std::to_string(b)}), &code, /*with_stderr=*/false);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("podman run --rm --name xpool-job" + std::to_string(b) + "-r0 --network host --ipc host"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("--env TOKEN "), std::string::npos) << out;
  EXPECT_EQ(out.find("s3cr3t"), std::string::npos) << "values stay off the command line: " << out;
  EXPECT_NE(out.find("localhost/team/train:v1 /bin/sh -c echo inside"), std::string::npos) << out;

  Json nowhere = ShellJob("nowhere", "echo inside");
  nowhere["image"] = "localhost/team/train:v1";
  nowhere["env"] = {{"PATH", (dir_ / "empty").string()}};
  const int64_t n = rest_->Submit(nowhere);
  Json failed = rest_->WaitState(n, "failed");
  EXPECT_NE(failed.dump().find("podman is not installed on this node"), std::string::npos) << failed.dump();
  EXPECT_NE(failed.dump().find("can never run here"), std::string::npos) << failed.dump();
}

TEST_F(UpJobsTest, LogsLastAcrossARestart) {
  const int64_t j = rest_->Submit(ShellJob("chatty", "for i in 1 2 3 4 5; do echo line $i; done"));
  rest_->WaitState(j, "succeeded");
  Up();  // a new server process: its memory holds no output
  int code = -1;
  std::string out = RunCli(Cli({"logs", std::to_string(j)}), &code, /*with_stderr=*/false);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("line 1\nline 2\nline 3\nline 4\nline 5\n"), std::string::npos) << out;
  // The last two lines: the task's last and the launcher's exit line.
  out = RunCli(Cli({"logs", std::to_string(j), "--tail", "2"}), &code, /*with_stderr=*/false);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.rfind("line 5\n[xpool] task exited with code 0", 0), 0u) << out;
  EXPECT_EQ(out.find("line 4"), std::string::npos) << out;
  Json api = rest_->Get("/api/v1/jobs/" + std::to_string(j) + "/logs?replica=0&offset=0");
  EXPECT_NE(api.value("data", "").find("line 1\n"), std::string::npos) << api.dump();
  out = RunCli(Cli({"logs", std::to_string(j), "--replica", "1"}), &code, /*with_stderr=*/true);
  EXPECT_NE(code, 0) << "a replica the job does not have: " << out;
}

// A server and two agents on this machine, each agent a node with one simulated GPU and its own state dir.
class TwoAgentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = xpool::testing::TempDir(std::string("jobs2_") +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "work");
    port_ = FreePort();
    agent_port_ = FreePort();
    while (agent_port_ == port_) agent_port_ = FreePort();
    ASSERT_TRUE(StartServer());
    token_ = ReadFile(dir_ / "var" / "admin.token");
    rest_ = std::make_unique<RestClient>(port_, token_);
    rest_->set_default_wait_seconds(60);
    rest_->set_diagnostics([this] {
      return "server:\n" + server_.Log() + "\nagent a:\n" + agents_[0].Log() + "\nagent b:\n" + agents_[1].Log();
    });
    for (int i = 0; i < 2; ++i) {
      const std::string name = i == 0 ? "node-a" : "node-b";
      ASSERT_TRUE(agents_[i].Start({"agent", "--server", "grpc://127.0.0.1:" + std::to_string(agent_port_),
                                    "--token-file", (dir_ / "var" / "admin.token").string(), "--simulate",
                                    "1xA100-80GB", "--name", name, "--state-dir", (dir_ / name).string()},
                                   dir_ / "work", dir_ / (name + ".log")));
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      Json nodes = rest_->Get("/api/v1/nodes");
      if (nodes.is_object() && nodes["nodes"].size() == 2) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "the agents did not register";
  }
  void TearDown() override {
    for (XpoolProcess& a : agents_) a.Stop();
    int code = -1;
    for (const char* n : {"node-a", "node-b"}) {
      RunCli({"agent", "--stop-tasks", "--grace", "1", "--state-dir", (dir_ / n).string()}, &code);
    }
    server_.Stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  bool StartServer() {
    if (!server_.Start(
            {"server", "--listen", "127.0.0.1:" + std::to_string(port_), "--state-dir", (dir_ / "var").string(),
             "--tick-ms", "200", "--agent-listen", "127.0.0.1:" + std::to_string(agent_port_), "--task-log-dir",
             (dir_ / "node-a").string() + "," + (dir_ / "node-b").string()},
            dir_ / "work", dir_ / "server.log")) {
      return false;
    }
    return server_.WaitHealthy(port_, 30);
  }
  std::vector<std::string> Cli(std::vector<std::string> args) {
    args.insert(args.end(), {"--server", "http://127.0.0.1:" + std::to_string(port_), "--token", token_});
    return args;
  }

  fs::path dir_;
  int port_ = 0, agent_port_ = 0;
  std::string token_;
  XpoolProcess server_;
  XpoolProcess agents_[2];
  std::unique_ptr<RestClient> rest_;
};

TEST_F(TwoAgentsTest, TorchDistributedAllReduceAcrossTwoNodes) {
  if (std::system("/usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "Debian's python3-torch is not installed (scripts/debian-packages.txt)";
  }
  const fs::path script = dir_ / "work" / "allreduce.py";
  std::ofstream(script) << R"(import datetime, os
import torch, torch.distributed as dist
env = {k: os.environ[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK",
                                  "MASTER_ADDR", "MASTER_PORT")}
print("env", " ".join(f"{k}={v}" for k, v in sorted(env.items())), flush=True)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: all_reduce sum = {t.item():.1f}", flush=True)
dist.destroy_process_group()
)";
  Json job = {{"name", "allreduce"},
              {"replicas", 2},
              {"resources", {{"cpu", "100m"}, {"memory", "64Mi"}, {"gpu", 1}}},
              {"workdir", (dir_ / "work").string()},
              {"command", {"/usr/bin/python3", script.string()}}};
  const int64_t id = rest_->Submit(job);
  Json done = rest_->WaitState(id, "succeeded", 120);
  EXPECT_EQ(done.value("state", ""), "succeeded") << done.dump();
  std::set<std::string> nodes;
  for (int replica = 0; replica < 2; ++replica) {
    SCOPED_TRACE("replica " + std::to_string(replica));
    int code = -1;
    const std::string out =
        RunCli(Cli({"logs", std::to_string(id), "--replica", std::to_string(replica)}), &code, false);
    EXPECT_EQ(code, 0) << out;
    const std::string r = std::to_string(replica);
    EXPECT_NE(out.find("rank " + r + " of 2: all_reduce sum = 3.0"), std::string::npos) << out;
    EXPECT_NE(out.find(" RANK=" + r + " "), std::string::npos) << out;
    EXPECT_NE(out.find("NODE_RANK=" + r + " "), std::string::npos) << out;
    EXPECT_NE(out.find("LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="), std::string::npos) << out;
    EXPECT_NE(out.find("WORLD_SIZE=2"), std::string::npos) << out;
  }
}

TEST_F(TwoAgentsTest, LogsFollowAcrossAServerRestart) {
  const int64_t id = rest_->Submit(ShellJob("ticker", "for i in $(seq 1 40); do echo tick $i; sleep 0.2; done"));
  rest_->WaitState(id, "running");
  XpoolProcess follow;
  ASSERT_TRUE(follow.Start(
      {"logs", std::to_string(id), "-f", "--server", "http://127.0.0.1:" + std::to_string(port_), "--token", token_},
      dir_ / "work", dir_ / "follow.log"));
  ASSERT_TRUE(follow.WaitForLog("tick 3\n", 20)) << follow.Log();
  server_.Stop();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_TRUE(StartServer()) << server_.Log();
  rest_->WaitState(id, "succeeded", 60);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (follow.Alive() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(follow.Alive()) << "logs -f ends with the job";
  const std::string out = follow.Log();
  for (int i = 1; i <= 40; ++i) {
    const std::string line = "tick " + std::to_string(i) + "\n";
    const size_t at = out.find(line);
    EXPECT_NE(at, std::string::npos) << "missing " << line << out;
    if (at != std::string::npos) {
      EXPECT_EQ(out.find(line, at + 1), std::string::npos) << "twice: " << line << out;
    }
  }
}

}  // namespace
