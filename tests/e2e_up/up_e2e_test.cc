// `xpool up` end to end: starts the real binary on port 0 (its hint must name the bound port) with a simulated
// 4xA100-80GB node and drives it over HTTP: 8 half-GPU jobs run at once (two per device, as real processes), a
// job exiting 3 is failed, cancel stops a running job's process.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/xpool_process.h"

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

using xpool::testing::ReadFile;

class UpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = xpool::testing::TempDir("up");
    up_ = std::make_unique<xpool::testing::UpProcess>(dir_);
    // --listen 127.0.0.1:0: UpProcess learns the port from the hint `xpool up` prints, which must name it.
    ASSERT_TRUE(up_->Start({"--simulate", "4xA100-80GB", "--node-name", "e2e-node"}))
        << "xpool up did not come up; log:\n" << up_->Log();
    port_ = up_->port();
    token_ = up_->token();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_connection_timeout(2, 0);
    client_->set_read_timeout(10, 0);
  }

  void TearDown() override {
    up_.reset();  // SIGTERM, then SIGKILL after 10 s
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  httplib::Headers Auth() const { return {{"Authorization", "Bearer " + token_}}; }

  Json Get(const std::string& path) {
    auto r = client_->Get(path.c_str(), Auth());
    if (!r || r->status != 200) return Json();
    return Json::parse(r->body, nullptr, false);
  }

  int64_t Submit(const std::string& name, const std::string& command) {
    Json spec = {{"name", name},
                 {"resources", {{"cpu", "100m"}, {"memory", "64Mi"}, {"gpu", 1}, {"gpumem-percentage", 50}}},
                 {"command", command}};
    auto r = client_->Post("/api/v1/jobs", Auth(), spec.dump(), "application/json");
    if (!r || r->status != 201) {
      ADD_FAILURE() << "submit " << name << ": " << (r ? r->body : std::string("no answer"));
      return -1;
    }
    return Json::parse(r->body)["id"].get<int64_t>();
  }

  Json Job(int64_t id) { return Get("/api/v1/jobs/" + std::to_string(id)); }

  // Waits until the job is in `state`; returns its last JSON.
  Json WaitState(int64_t id, const std::string& state, int seconds = 20) {
    Json j;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      j = Job(id);
      if (j.is_object() && j.value("state", "") == state) return j;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "job " << id << " did not reach " << state << ": " << j.dump() << "\nlog:\n"
                  << up_->Log();
    return j;
  }

  fs::path dir_;
  std::unique_ptr<xpool::testing::UpProcess> up_;
  int port_ = 0;
  std::string token_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(UpTest, EightHalfGpuJobsRunTwoPerDeviceExit3FailsCancelStops) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 8; ++i) {
    // Each task writes its pid and then sleeps: proof that the agent really started it.
    const std::string pidfile = (dir_ / ("task" + std::to_string(i) + ".pid")).string();
    ids.push_back(Submit("half-" + std::to_string(i), "echo $$ > " + pidfile + "; exec sleep 120"));
  }
  std::map<std::string, int> per_device;
  for (int64_t id : ids) {
    Json j = WaitState(id, "running");
    ASSERT_EQ(j["placement"].size(), 1u) << j.dump();
    ASSERT_EQ(j["placement"][0]["devices"].size(), 1u) << j.dump();
    per_device[j["placement"][0]["devices"][0]["uuid"].get<std::string>()]++;
  }
  EXPECT_EQ(per_device.size(), 4u);
  for (const auto& [uuid, n] : per_device) EXPECT_EQ(n, 2) << uuid;
  // Every process is alive at the same time.
  std::vector<pid_t> pids;
  for (int i = 0; i < 8; ++i) {
    const fs::path pidfile = dir_ / ("task" + std::to_string(i) + ".pid");
    for (int k = 0; k < 50 && !fs::exists(pidfile); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::string text = ReadFile(pidfile);
    ASSERT_FALSE(text.empty()) << pidfile;
    pids.push_back(static_cast<pid_t>(std::stol(text)));
    EXPECT_EQ(::kill(pids.back(), 0), 0) << "task " << i << " is not running";
  }

  // The node is full: a ninth job waits.
  int64_t ninth = Submit("exit3", "echo failing; exit 3");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(Job(ninth).value("state", ""), "queued");

  // Cancel stops the process; its half device goes to the ninth job, which exits 3 → failed.
  auto r = client_->Delete(("/api/v1/jobs/" + std::to_string(ids[0])).c_str(), Auth());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  bool gone = false;
  for (int k = 0; k < 100 && !gone; ++k) {
    gone = ::kill(pids[0], 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "the cancelled job's process still runs";
  EXPECT_EQ(Job(ids[0]).value("state", ""), "cancelled");
  EXPECT_EQ(::kill(pids[1], 0), 0) << "another job's process was stopped";

  Json failed = WaitState(ninth, "failed");
  EXPECT_NE(failed.value("state_reason", "").find("exited with code 3"), std::string::npos) << failed.dump();

  // Its output, through the CLI (`xpool logs`, fed in-process by the agent's log chunks).
  std::string out;
  for (int k = 0; k < 50 && out.find("failing") == std::string::npos; ++k) {
    int code = -1;
    out = xpool::testing::RunCli({"logs", std::to_string(ninth), "--server", "http://127.0.0.1:" + std::to_string(port_),
                              "--token", token_},
                             &code);
    EXPECT_EQ(code, 0) << out;
    if (out.find("failing") == std::string::npos) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(out.find("failing"), std::string::npos) << out;
}

}  // namespace
