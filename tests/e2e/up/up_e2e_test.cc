// `xpool up` end to end: starts the real binary on port 0 (its hint must name the bound port) with a simulated
// 4xA100-80GB node and drives it over HTTP: 8 half-GPU jobs run at once (two per device, as real processes), a
// job exiting 3 is failed, cancel stops a running job's process.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "support/rest_client.h"
#include "support/xpool_process.h"

namespace {

using xpool::testing::Json;
namespace fs = std::filesystem;

using xpool::testing::ReadFile;

class UpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = xpool::testing::TempDir("up");
    up_ = std::make_unique<xpool::testing::UpProcess>(dir_);
    // --listen 127.0.0.1:0: UpProcess learns the port from the hint `xpool up` prints, which must name it.
    ASSERT_TRUE(up_->Start({"--simulate", "4xA100-80GB", "--node-name", "e2e-node"}))
        << "xpool up did not come up; log:\n"
        << up_->Log();
    rest_ = std::make_unique<xpool::testing::RestClient>(up_->port(), up_->token());
    rest_->set_diagnostics([this] { return "log:\n" + up_->Log(); });
  }

  void TearDown() override {
    up_.reset();  // SIGTERM, then SIGKILL after 10 s
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  int64_t Submit(const std::string& name, const std::string& command) {
    return rest_->Submit(xpool::testing::HalfGpuJob(name, command));
  }
  Json Job(int64_t id) { return rest_->Job(id); }
  Json WaitState(int64_t id, const std::string& state) { return rest_->WaitState(id, state); }

  fs::path dir_;
  std::unique_ptr<xpool::testing::UpProcess> up_;
  std::unique_ptr<xpool::testing::RestClient> rest_;
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
  auto r = rest_->http().Delete(("/api/v1/jobs/" + std::to_string(ids[0])).c_str(), rest_->Auth());
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
    out =
        xpool::testing::RunCli({"logs", std::to_string(ninth), "--server", up_->url(), "--token", up_->token()}, &code);
    EXPECT_EQ(code, 0) << out;
    if (out.find("failing") == std::string::npos) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(out.find("failing"), std::string::npos) << out;
}

// MIG on `xpool up` through the fake NVML (its MIG state in a file, as the real one lives on the GPU): `xpool agent
// --mig-geometry` partitions GPU 0, `xpool up` discovers the instances, and a job selecting one by model runs on it
// with the instance's uuid as its only visible device.
TEST(UpMigTest, AJobSelectingAMigInstanceRunsOnItByUuid) {
  const fs::path dir = xpool::testing::TempDir("up-mig");
  const std::string mig_state = (dir / "mig-state").string();
  setenv("FAKE_NVML_MIG_STATE", mig_state.c_str(), 1);
  const char* bin = std::getenv("XPOOL_BINARY_DIR");
  const std::string partition = std::string(bin ? bin : ".") + "/bin/xpool agent --discovery nvml --nvml-library " +
                                XPOOL_FAKE_NVML_PATH +
                                " --mig-geometry '0=3g.40gb,2x1g.10gb' --print-devices >/dev/null";
  ASSERT_EQ(std::system(partition.c_str()), 0);
  {
    xpool::testing::UpProcess up(dir);
    ASSERT_TRUE(up.Start({"--nvml-library", XPOOL_FAKE_NVML_PATH, "--node-name", "mig-node"})) << up.Log();
    xpool::testing::RestClient rest(up.port(), up.token());
    rest.set_diagnostics([&up] { return "log:\n" + up.Log(); });
    const Json spec = {{"name", "on-a-3g"},
                       {"resources", {{"cpu", "100m"}, {"memory", "64Mi"}, {"gpu", 1}, {"gpu-type", "MIG 3g.40gb"}}},
                       {"command", "echo visible=$CUDA_VISIBLE_DEVICES; sleep 2"}};
    const int64_t id = rest.Submit(spec);
    Json job = rest.WaitState(id, "running");
    ASSERT_EQ(job["placement"].size(), 1u) << job.dump();
    EXPECT_EQ(job["placement"][0]["devices"][0]["uuid"], "MIG-fake-0000-0001") << job.dump();
    rest.WaitState(id, "succeeded");
    auto log = rest.http().Get(("/api/v1/jobs/" + std::to_string(id) + "/logs").c_str(), rest.Auth());
    ASSERT_TRUE(log && log->status == 200);
    EXPECT_NE(Json::parse(log->body)["data"].get<std::string>().find("visible=MIG-fake-0000-0001"), std::string::npos)
        << log->body;
    // `mig: PROFILE` takes an instance of exactly that profile, held whole; a profile no GPU holds waits, saying so.
    const Json one_g = {{"name", "on-a-1g"},
                        {"resources", {{"cpu", "100m"}, {"memory", "64Mi"}, {"mig", "1g.10gb"}}},
                        {"command", "sleep 30"}};
    const int64_t a = rest.Submit(one_g), b = rest.Submit(one_g), c = rest.Submit(one_g);
    std::set<std::string> uuids;
    for (int64_t running : {a, b}) {
      Json j = rest.WaitState(running, "running");
      ASSERT_EQ(j["placement"].size(), 1u) << j.dump();
      uuids.insert(j["placement"][0]["devices"][0]["uuid"].get<std::string>());
    }
    EXPECT_EQ(uuids, (std::set<std::string>{"MIG-fake-0000-0002", "MIG-fake-0000-0003"}));
    Json third = rest.WaitFor(c, "queued with a reason", [](const Json& j) {
      return j["state"] == "queued" && !j["reason"].get<std::string>().empty();
    });
    EXPECT_NE(third["reason"].get<std::string>().find("held exclusively"), std::string::npos) << third.dump();
    Json seven_g = one_g;
    seven_g["resources"]["mig"] = "7g.80gb";
    const int64_t d = rest.Submit(seven_g);
    rest.WaitFor(d, "waiting for a 7g.80gb instance", [](const Json& j) {
      return j["reason"].get<std::string>().find("no MIG instance of the requested profile") != std::string::npos;
    });
  }
  unsetenv("FAKE_NVML_MIG_STATE");
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// Dynamic MIG: an agent run with --mig-dynamic (fake NVML, GPU 0 in MIG mode as one 7g.80gb instance) joins
// `xpool up`; two `mig: 3g.40gb` jobs wait, the server plans GPU 0 as two 3g.40gb instances, the agent applies it,
// registers the new instances and both jobs run on them, each seeing its own instance's uuid. Then, while a job
// runs on one 3g.40gb, a `mig: 1g.10gb` job has the idle one replaced by a 1g.10gb instance: the running job keeps
// its instance and its task (the agent adopts it after discovering the GPUs again) and ends as it would have.
TEST(UpMigTest, WaitingMigJobsRepartitionAnIdleGpuOfADynamicAgent) {
  const fs::path dir = xpool::testing::TempDir("up-mig-dynamic");
  const std::string mig_state = (dir / "mig-state").string();
  setenv("FAKE_NVML_MIG_STATE", mig_state.c_str(), 1);
  int code = 0;
  const std::string nvml = XPOOL_FAKE_NVML_PATH;
  const std::string printed = xpool::testing::RunCli(
      {"agent", "--discovery", "nvml", "--nvml-library", nvml, "--mig-geometry", "0=7g.80gb", "--print-devices"},
      &code);
  ASSERT_EQ(code, 0) << printed;
  {
    xpool::testing::UpProcess up(dir);
    const int agent_port = xpool::testing::FreePort();
    ASSERT_TRUE(up.Start({"--simulate", "1xT4-16GB", "--node-name", "cpu-node", "--agent-listen",
                          "127.0.0.1:" + std::to_string(agent_port)}))
        << up.Log();
    xpool::testing::XpoolProcess agent;
    ASSERT_TRUE(agent.Start({"agent", "--server", "grpc://127.0.0.1:" + std::to_string(agent_port), "--token",
                             up.token(), "--discovery", "nvml", "--nvml-library", nvml, "--mig-dynamic", "--name",
                             "mig-node", "--state-dir", (dir / "agent").string()},
                            dir, dir / "agent.log"));
    xpool::testing::RestClient rest(up.port(), up.token());
    rest.set_diagnostics([&] { return "up log:\n" + up.Log() + "\nagent log:\n" + ReadFile(dir / "agent.log"); });
    const Json spec = {{"name", "on-a-3g"},
                       {"resources", {{"cpu", "100m"}, {"memory", "64Mi"}, {"mig", "3g.40gb"}}},
                       {"command", "echo visible=$CUDA_VISIBLE_DEVICES; sleep 3"}};
    const int64_t a = rest.Submit(spec), b = rest.Submit(spec);
    std::map<int64_t, std::string> uuid_of;
    for (int64_t id : {a, b}) {  // both run at once, each on an instance of its own
      Json j = rest.WaitState(id, "running", 60);
      ASSERT_EQ(j["placement"].size(), 1u) << j.dump();
      EXPECT_EQ(j["placement"][0]["node"], "mig-node") << j.dump();
      uuid_of[id] = j["placement"][0]["devices"][0]["uuid"].get<std::string>();
      EXPECT_EQ(uuid_of[id].rfind("MIG-", 0), 0u) << j.dump();
    }
    std::set<std::string> uuids;
    for (const auto& [id, uuid] : uuid_of) {
      uuids.insert(uuid);
      rest.WaitState(id, "succeeded");
      auto log = rest.http().Get(("/api/v1/jobs/" + std::to_string(id) + "/logs").c_str(), rest.Auth());
      ASSERT_TRUE(log && log->status == 200);
      EXPECT_NE(Json::parse(log->body)["data"].get<std::string>().find("visible=" + uuid), std::string::npos)
          << log->body;
    }
    EXPECT_EQ(uuids.size(), 2u);  // two instances, one each
    const Json nodes = rest.Get("/api/v1/nodes");
    int three_g = 0;
    for (const Json& n : nodes["nodes"]) {
      if (n["name"] != "mig-node") continue;
      for (const Json& d : n["devices"]) three_g += d["model"].get<std::string>().ends_with("MIG 3g.40gb") ? 1 : 0;
    }
    EXPECT_EQ(three_g, 2) << nodes.dump();
    EXPECT_NE(ReadFile(dir / "agent.log").find("the server asks for MIG geometry 0=3g.40gb@0,3g.40gb@4 (0 task"),
              std::string::npos);

    Json long_one = spec;
    long_one["command"] = "sleep 8; echo done";
    const int64_t busy = rest.Submit(long_one);
    Json running = rest.WaitState(busy, "running", 30);
    const std::string busy_uuid = running["placement"][0]["devices"][0]["uuid"].get<std::string>();
    Json small = spec;
    small["resources"]["mig"] = "1g.10gb";
    small["command"] = "echo visible=$CUDA_VISIBLE_DEVICES; sleep 2";
    const int64_t beside = rest.Submit(small);
    Json placed = rest.WaitState(beside, "running", 30);
    const std::string small_uuid = placed["placement"][0]["devices"][0]["uuid"].get<std::string>();
    EXPECT_EQ(small_uuid.rfind("MIG-", 0), 0u) << placed.dump();
    EXPECT_EQ(uuids.count(small_uuid), 0u) << "a new instance, not one of the 3g.40gb: " << placed.dump();
    running = rest.Get("/api/v1/jobs/" + std::to_string(busy));
    EXPECT_EQ(running["state"], "running") << running.dump();  // while the other instance was remade
    EXPECT_EQ(running["placement"][0]["devices"][0]["uuid"], busy_uuid) << running.dump();
    Json ended = rest.WaitState(busy, "succeeded", 30);
    EXPECT_EQ(ended["restart_count"].get<int>(), 0) << ended.dump();
    const std::string agent_log = ReadFile(dir / "agent.log");
    EXPECT_NE(agent_log.find("(1 task(s) keep running)"), std::string::npos) << agent_log;
    agent.Stop();
  }
  unsetenv("FAKE_NVML_MIG_STATE");
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// `xpool up --mig-geometry 0= --mig-dynamic` on the fake NVML: GPU 0 in MIG mode without instances, offered by
// start slot; a `mig: 3g.40gb` job has one made, and while it runs a `mig: 1g.10gb` job gets an instance made
// beside it — the first job's task keeps running through the change and exits 0.
TEST(UpMigTest, UpWithMigDynamicMakesInstancesBesideTheOnesInUse) {
  const fs::path dir = xpool::testing::TempDir("up-mig-dynamic-inproc");
  const std::string mig_state = (dir / "mig-state").string();
  setenv("FAKE_NVML_MIG_STATE", mig_state.c_str(), 1);
  {
    xpool::testing::UpProcess up(dir);
    ASSERT_TRUE(up.Start(
        {"--nvml-library", XPOOL_FAKE_NVML_PATH, "--node-name", "mig-node", "--mig-geometry", "0=", "--mig-dynamic"}))
        << up.Log();
    xpool::testing::RestClient rest(up.port(), up.token());
    rest.set_diagnostics([&up] { return "log:\n" + up.Log(); });
    const Json first = {{"name", "three-g"},
                        {"resources", {{"cpu", "100m"}, {"memory", "64Mi"}, {"mig", "3g.40gb"}}},
                        {"command", "sleep 6"}};
    const int64_t a = rest.Submit(first);
    Json running = rest.WaitState(a, "running", 30);
    const std::string a_uuid = running["placement"][0]["devices"][0]["uuid"].get<std::string>();
    Json second = first;
    second["name"] = "one-g";
    second["resources"]["mig"] = "1g.10gb";
    second["command"] = "sleep 2";
    const int64_t b = rest.Submit(second);
    Json placed = rest.WaitState(b, "running", 30);
    EXPECT_NE(placed["placement"][0]["devices"][0]["uuid"], a_uuid) << placed.dump();
    running = rest.Get("/api/v1/jobs/" + std::to_string(a));
    EXPECT_EQ(running["state"], "running") << running.dump();
    EXPECT_EQ(running["placement"][0]["devices"][0]["uuid"], a_uuid) << running.dump();
    Json ended = rest.WaitState(a, "succeeded", 30);
    EXPECT_EQ(ended["restart_count"].get<int>(), 0) << ended.dump();
    EXPECT_NE(up.Log().find("(1 task(s) keep running)"), std::string::npos) << up.Log();
  }
  unsetenv("FAKE_NVML_MIG_STATE");
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// `xpool up --simulate 1xA100-80GB --mps all` with a stand-in MPS control program: the device is in MPS mode,
// its daemon runs under the tasks' root, and a job asking 8 GiB and 50 % of the cores gets the MPS client variables
// that hold it to them (the pinned memory limit, the active thread percentage).
TEST(UpMpsTest, AJobOnAnMpsDeviceGetsItsDaemonAndLimits) {
  const fs::path dir = xpool::testing::TempDir("up-mps");
  const fs::path control = dir / "mps-control";
  {
    std::ofstream script(control);
    script << "#!/bin/sh\np=\"$CUDA_MPS_PIPE_DIRECTORY\"\n"
           << "if [ \"$1\" = \"-d\" ]; then : > \"$p/control\"; exit 0; fi\n"
           << "[ -e \"$p/control\" ] || exit 1\nwhile read -r cmd; do :; done\n";
  }
  fs::permissions(control, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  {
    xpool::testing::UpProcess up(dir);
    ASSERT_TRUE(up.Start(
        {"--simulate", "1xA100-80GB", "--node-name", "mps-node", "--mps", "all", "--mps-control", control.string()}))
        << up.Log();
    xpool::testing::RestClient rest(up.port(), up.token());
    rest.set_diagnostics([&up] { return "log:\n" + up.Log(); });
    const Json nodes = rest.Get("/api/v1/nodes");
    ASSERT_EQ(nodes["nodes"].size(), 1u) << nodes.dump();
    EXPECT_EQ(nodes["nodes"][0]["devices"][0]["mode"], "mps") << nodes.dump();
    const Json spec = {
        {"name", "mps-job"},
        {"resources", {{"cpu", "100m"}, {"memory", "64Mi"}, {"gpu", 1}, {"gpumem", "8Gi"}, {"gpucores", 50}}},
        {"command",
         "echo pipe=$CUDA_MPS_PIPE_DIRECTORY threads=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE "
         "mem=$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"}};
    const int64_t id = rest.Submit(spec);
    rest.WaitState(id, "succeeded", 30);
    auto log = rest.http().Get(("/api/v1/jobs/" + std::to_string(id) + "/logs").c_str(), rest.Auth());
    ASSERT_TRUE(log && log->status == 200);
    const std::string out = Json::parse(log->body)["data"].get<std::string>();
    EXPECT_NE(out.find("/mps/0/pipe threads=50 mem=0=8192M"), std::string::npos) << out;
    EXPECT_NE(up.Log().find("MPS control daemons run for devices 0"), std::string::npos) << up.Log();
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
