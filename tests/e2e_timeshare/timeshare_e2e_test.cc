// Time-sharing end to end (issue 7, item 7): starts the real `xpool up` on a free port with a simulated
// 4xA100-80GB node (`--min-runtime 0`, short graces) and talks to it only over HTTP:
//   - low-priority preemptible jobs built on examples/xpool_helper.py fill the node; two high-priority jobs
//     arrive; the two youngest low jobs are asked to suspend: the cooperative one checkpoints and exits 0, the
//     one that ignores the signal is stopped after its grace; both go back to the queue (restart 1); the high
//     jobs run and finish; then the low jobs run again and the cooperative one resumes FROM ITS CHECKPOINT;
//   - a tenant at its limit waits with that reason; suspend of a queued job is 409; suspend / resume by hand;
//   - a tenant under its guarantee preempts an over-guarantee tenant's job of the same priority.
// The job's own checkpoint file (in its workdir) and its output log are read as a user would read them.
// Runs in about 21 s (13 s + 7.5 s) under ASan on a loaded machine.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "e2e_up/e2e_support.h"

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

using xpool::e2e::FreePort;
using xpool::e2e::ReadFile;

class TimeshareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* src = std::getenv("XPOOL_SOURCE_DIR");
    script_ = fs::path(src ? src : ".") / "examples" / "timeshare" / "train_steps.py";
    if (!fs::exists(script_)) GTEST_SKIP() << "no " << script_;
    if (std::system("python3 -c pass >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 is not installed";
    dir_ = fs::temp_directory_path() /
           ("xpool-timeshare-e2e-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    port_ = FreePort();
    const char* bin_dir = std::getenv("XPOOL_BINARY_DIR");
    const std::string bin = std::string(bin_dir ? bin_dir : ".") + "/bin/xpool";
    const std::string listen = "127.0.0.1:" + std::to_string(port_);
    const std::string state = (dir_ / "var").string();
    const std::string log = (dir_ / "up.log").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      if (::chdir(dir_.c_str()) != 0) std::_Exit(126);
      FILE* f = std::freopen(log.c_str(), "w", stderr);
      (void)f;
      ::execl(bin.c_str(), bin.c_str(), "up", "--listen", listen.c_str(), "--state-dir", state.c_str(), "--simulate",
              "4xA100-80GB", "--node-name", "ts-node", "--min-runtime", "0", static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    ASSERT_GT(pid_, 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_connection_timeout(2, 0);
    client_->set_read_timeout(10, 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (admin_.empty() && fs::exists(dir_ / "var" / "admin.token")) {
        admin_ = ReadFile(dir_ / "var" / "admin.token");
        while (!admin_.empty() && (admin_.back() == '\n' || admin_.back() == ' ')) admin_.pop_back();
      }
      if (!admin_.empty()) {
        Json r = Get("/api/v1/nodes");
        if (r.is_object() && r.contains("nodes") && r["nodes"].size() == 1) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "xpool up did not come up; log:\n" << ReadFile(dir_ / "up.log");
  }

  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      for (int i = 0; i < 100 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (::waitpid(pid_, &status, WNOHANG) == 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
      }
    }
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  static httplib::Headers Auth(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

  Json Get(const std::string& path, const std::string& token = "") {
    auto r = client_->Get(path.c_str(), Auth(token.empty() ? admin_ : token));
    if (!r || r->status != 200) return Json();
    return Json::parse(r->body, nullptr, false);
  }

  // A train_steps.py job: one whole GPU, low priority, preemptible, in the test's directory.
  Json TrainSpec(const std::string& name, double step_seconds, int grace, bool ignore = false) {
    Json command = {"python3", script_.string(), "--steps", "100000", "--step-seconds", std::to_string(step_seconds),
                    "--checkpoint-every", "100000"};  // the only checkpoint is the one the suspend asks for
    if (ignore) command.push_back("--ignore-suspend");
    return Json{{"name", name},
                {"priority", "low"},
                {"preemptible", true},
                {"checkpoint", {{"grace", grace}}},
                {"resources", {{"cpu", "100m"}, {"memory", "64Mi"}, {"gpu", 1}, {"gpucores", 100}}},
                {"command", command}};
  }
  static Json SleepSpec(const std::string& name, const std::string& priority, int seconds) {
    return Json{{"name", name},
                {"priority", priority},
                {"resources", {{"cpu", "100m"}, {"memory", "64Mi"}, {"gpu", 1}, {"gpucores", 100}}},
                {"command", "sleep " + std::to_string(seconds)}};
  }

  int64_t Submit(const Json& spec, const std::string& token = "") {
    auto r = client_->Post("/api/v1/jobs", Auth(token.empty() ? admin_ : token), spec.dump(), "application/json");
    if (!r || r->status != 201) {
      ADD_FAILURE() << "submit " << spec.dump() << ": " << (r ? r->body : std::string("no answer"));
      return -1;
    }
    return Json::parse(r->body)["id"].get<int64_t>();
  }

  Json Job(int64_t id) { return Get("/api/v1/jobs/" + std::to_string(id)); }

  std::string Events(int64_t id) {
    Json e = Get("/api/v1/jobs/" + std::to_string(id) + "/events");
    return e.is_object() ? e.dump() : "";
  }

  // Waits until `ok(job)`; returns the job's last JSON.
  Json WaitFor(int64_t id, const std::string& what, const std::function<bool(const Json&)>& ok, int seconds = 30) {
    Json j;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      j = Job(id);
      if (j.is_object() && ok(j)) return j;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "job " << id << " never became " << what << ": " << j.dump() << "\nevents: " << Events(id)
                  << "\nlog:\n" << ReadFile(dir_ / "up.log");
    return j;
  }
  Json WaitState(int64_t id, const std::string& state, int seconds = 30) {
    return WaitFor(id, state, [&](const Json& j) { return j.value("state", "") == state; }, seconds);
  }
  Json WaitRunningAgain(int64_t id) {
    return WaitFor(id, "running with restart_count 1", [](const Json& j) {
      return j.value("state", "") == "running" && j.value("restart_count", 0) == 1;
    });
  }

  // The task's output as the agent keeps it (var/tasks/<task>/output.log and its rotations).
  std::string TaskOutput(int64_t id) {
    std::string out;
    const fs::path dir = dir_ / "var" / "tasks" / ("job" + std::to_string(id) + "-r0");
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().filename().string().rfind("output.log", 0) == 0) out += ReadFile(e.path());
    }
    return out;
  }

  // The step the job's last checkpoint holds (-1 when none).
  int CheckpointStep(int64_t id) {
    Json c = Json::parse(ReadFile(dir_ / ("checkpoint-job" + std::to_string(id) + "-r0.json")), nullptr, false);
    return c.is_object() && c.contains("step") ? c["step"].get<int>() : -1;
  }

  fs::path script_;
  fs::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string admin_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(TimeshareTest, HighPrioritySuspendsLowWhichResumesFromItsCheckpoint) {
  // Two older low jobs, then the two youngest: victims are chosen least-work-lost first (youngest).
  const int64_t old1 = Submit(TrainSpec("old1", 0.2, 5));
  const int64_t old2 = Submit(TrainSpec("old2", 0.2, 5));
  WaitState(old1, "running");
  WaitState(old2, "running");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const int64_t coop = Submit(TrainSpec("coop", 0.05, 10));
  const int64_t stubborn = Submit(TrainSpec("stubborn", 0.05, 1, /*ignore=*/true));
  WaitState(coop, "running");
  WaitState(stubborn, "running");
  // Let the cooperative job make progress (its log shows steps).
  const auto progress_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (TaskOutput(coop).find("step 5/") == std::string::npos && std::chrono::steady_clock::now() < progress_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(TaskOutput(coop).find("step 5/"), std::string::npos) << TaskOutput(coop);

  const int64_t high1 = Submit(SleepSpec("urgent1", "high", 3));
  const int64_t high2 = Submit(SleepSpec("urgent2", "high", 3));

  // The cooperative job checkpoints, exits 0 and waits in the queue again (restart 1, same first submit).
  Json back = WaitFor(coop, "suspended and requeued", [](const Json& j) {
    return j.value("restart_count", 0) == 1 && j.value("state", "") != "running";
  });
  const int saved = CheckpointStep(coop);
  EXPECT_GT(saved, 0) << "no checkpoint written on suspend; output:\n" << TaskOutput(coop);
  EXPECT_NE(TaskOutput(coop).find("suspend requested: checkpoint at step"), std::string::npos) << TaskOutput(coop);
  const std::string coop_events = Events(coop);
  EXPECT_NE(coop_events.find("suspended for job"), std::string::npos) << coop_events;
  EXPECT_NE(coop_events.find("checkpointed and exited 0"), std::string::npos) << coop_events;

  // The one that ignores the signal is stopped after its 1 s grace and requeued all the same.
  WaitFor(stubborn, "stopped and requeued", [](const Json& j) { return j.value("restart_count", 0) == 1; });
  const std::string stubborn_events = Events(stubborn);
  EXPECT_NE(stubborn_events.find("after its checkpoint grace"), std::string::npos) << stubborn_events;

  // The older low jobs were not touched; the decision is an event on the preemptors too.
  EXPECT_EQ(Job(old1).value("restart_count", -1), 0);
  EXPECT_EQ(Job(old2).value("restart_count", -1), 0);
  const std::string high_events = Events(high1) + Events(high2);
  EXPECT_NE(high_events.find("suspends job " + std::to_string(coop)), std::string::npos) << high_events;
  EXPECT_NE(high_events.find("suspends job " + std::to_string(stubborn)), std::string::npos) << high_events;

  // The high jobs run and finish; then the low ones run again, the cooperative one from its checkpoint.
  WaitState(high1, "succeeded");
  WaitState(high2, "succeeded");
  WaitRunningAgain(coop);
  WaitRunningAgain(stubborn);
  const std::string resumed = "resuming from step " + std::to_string(saved) + " (restart 1)";
  const auto resume_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (TaskOutput(coop).find(resumed) == std::string::npos && std::chrono::steady_clock::now() < resume_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(TaskOutput(coop).find(resumed), std::string::npos) << "wanted '" << resumed << "' in:\n"
                                                                 << TaskOutput(coop);
  EXPECT_EQ(back.value("submitted_at_us", int64_t{0}), Job(coop).value("submitted_at_us", int64_t{-1}));
}

TEST_F(TimeshareTest, TenantLimitSuspendByHandAndBadSuspend) {
  auto created = client_->Post("/api/v1/tenants", Auth(admin_),
                               Json{{"name", "capped"}, {"quota", {{"devices", 1}}}}.dump(), "application/json");
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;
  auto tok = client_->Post("/api/v1/tenants/capped/tokens", Auth(admin_), "{}", "application/json");
  ASSERT_TRUE(tok);
  ASSERT_EQ(tok->status, 201) << tok->body;
  const std::string token = Json::parse(tok->body)["token"].get<std::string>();

  Json first_spec = TrainSpec("first", 0.05, 10);
  first_spec["priority"] = "normal";
  const int64_t first = Submit(first_spec, token);
  WaitState(first, "running");
  const int64_t second = Submit(SleepSpec("second", "normal", 1), token);
  Json waiting = WaitFor(second, "waiting at the tenant's limit", [](const Json& j) {
    return j.value("state", "") == "queued" && j.value("reason", "").find("at its gpu limit") != std::string::npos;
  });
  EXPECT_NE(waiting.value("reason", "").find("tenant capped"), std::string::npos) << waiting.dump();

  // Suspending a job that is not running: 409 with the reason.
  auto bad = client_->Post(("/api/v1/jobs/" + std::to_string(second) + "/suspend").c_str(), Auth(token), "",
                           "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 409) << bad->body;
  EXPECT_NE(bad->body.find("only a running job can be suspended"), std::string::npos) << bad->body;

  // By hand: suspend → the task checkpoints → suspended (held); the next job of the tenant runs meanwhile.
  auto s = client_->Post(("/api/v1/jobs/" + std::to_string(first) + "/suspend").c_str(), Auth(token), "",
                         "application/json");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, 200) << s->body;
  WaitState(first, "suspended");
  WaitState(second, "succeeded");
  EXPECT_GE(CheckpointStep(first), 0);
  auto r = client_->Post(("/api/v1/jobs/" + std::to_string(first) + "/resume").c_str(), Auth(token), "",
                         "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  WaitRunningAgain(first);
}

TEST_F(TimeshareTest, TenantUnderItsGuaranteePreemptsAnOverGuaranteeTenantAtEqualPriority) {
  // "vip" is guaranteed one device; the admin's own tenant is guaranteed nothing, so it runs above its
  // guarantee as soon as it runs anything.
  auto created = client_->Post("/api/v1/tenants", Auth(admin_),
                               Json{{"name", "vip"}, {"guaranteed", {{"devices", 1}}}}.dump(), "application/json");
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;
  auto tok = client_->Post("/api/v1/tenants/vip/tokens", Auth(admin_), "{}", "application/json");
  ASSERT_TRUE(tok);
  ASSERT_EQ(tok->status, 201) << tok->body;
  const std::string vip = Json::parse(tok->body)["token"].get<std::string>();

  // The admin's tenant fills the node with normal-priority preemptible jobs; the youngest is the victim. It
  // asks for SIGUSR2 (checkpoint.signal): were SIGUSR1 sent, or the helper not told, the signal would kill it
  // instead of a clean "checkpointed and exited 0".
  std::vector<int64_t> fill;
  for (int i = 0; i < 4; ++i) {
    Json spec = TrainSpec("fill" + std::to_string(i), 0.05, 5);
    spec["priority"] = "normal";
    if (i == 3) spec["checkpoint"]["signal"] = "SIGUSR2";
    fill.push_back(Submit(spec));
    WaitState(fill.back(), "running");
  }
  const int64_t youngest = fill.back();

  // Same priority: only the guarantee entitles the vip job to preempt.
  const int64_t v = Submit(SleepSpec("vip-job", "normal", 2), vip);
  WaitFor(youngest, "suspended and requeued", [](const Json& j) { return j.value("restart_count", 0) == 1; });
  const std::string victim_events = Events(youngest);
  EXPECT_NE(victim_events.find("suspended for job " + std::to_string(v)), std::string::npos) << victim_events;
  EXPECT_NE(victim_events.find("tenant vip is within its guarantee"), std::string::npos) << victim_events;
  EXPECT_NE(victim_events.find("checkpointed and exited 0"), std::string::npos) << victim_events;
  EXPECT_NE(Events(v).find("suspends job " + std::to_string(youngest)), std::string::npos) << Events(v);
  for (size_t i = 0; i + 1 < fill.size(); ++i) EXPECT_EQ(Job(fill[i]).value("restart_count", -1), 0) << fill[i];

  // The vip job runs and finishes; the victim runs again.
  WaitState(v, "succeeded");
  WaitRunningAgain(youngest);
}

}  // namespace
