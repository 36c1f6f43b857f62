// End-to-end: the real `xpool server` binary, killed with SIGKILL while jobs are being submitted and cancelled.
// After a restart every job that got a 201 must be there in its last committed state, and the allocations in
// the store (job placements) must match the rebuilt ClusterState (node usage).
// Also: the first-start flow a user follows with the `xpool` CLI.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "support/xpool_process.h"

namespace xpool::testing {
namespace {

using nlohmann::json;

enum class Expect { kLive, kCancelMaybe, kCancelled };

const char* kJobs[] = {
    R"({"name":"gpu","command":["true"],"resources":{"gpu":1,"gpumem":"8Gi","gpucores":20}})",
    R"({"name":"cpu","command":["true"],"resources":{"cpu":1,"memory":"1Gi"}})",
    R"({"name":"gang","command":["true"],"replicas":2,"resources":{"gpu":1,"gpumem":"4Gi"}})",
    R"({"name":"huge","command":["true"],"resources":{"gpu":1,"gpumem":"500Gi"}})",
};

// Checks the per-device allocation shown on the nodes equals the sum of the job placements in the store.
void ExpectAllocationsMatch(httplib::Client& c) {
  auto jobs = c.Get("/api/v1/jobs?limit=100000");
  ASSERT_TRUE(jobs && jobs->status == 200);
  std::map<std::string, int64_t> memory_by_uuid, compute_by_uuid;
  const json job_list = json::parse(jobs->body);
  for (const json& j : job_list["jobs"]) {
    for (const json& p : j["placement"]) {
      for (const json& d : p["devices"]) {
        memory_by_uuid[d["uuid"]] += d["memory_mib"].get<int64_t>();
        compute_by_uuid[d["uuid"]] += d["compute_milli"].get<int64_t>();
      }
    }
  }
  auto nodes = c.Get("/api/v1/nodes");
  ASSERT_TRUE(nodes && nodes->status == 200);
  int64_t total = 0;
  const json node_list = json::parse(nodes->body);
  for (const json& n : node_list["nodes"]) {
    for (const json& d : n["devices"]) {
      std::string uuid = d["uuid"];
      SCOPED_TRACE(uuid);
      EXPECT_EQ(d["memory_allocated_mib"].get<int64_t>(), memory_by_uuid[uuid]);
      EXPECT_EQ(d["compute_allocated_milli"].get<int64_t>(), compute_by_uuid[uuid]);
      total += memory_by_uuid[uuid];
    }
  }
  std::printf("allocated device memory after restart: %lld MiB\n", static_cast<long long>(total));
}

TEST(ServerCrashTest, AcknowledgedJobsSurviveKill9) {
  auto dir = TempDir("crash");
  ServerProcess server(XpoolBinary(), dir.string());
  ASSERT_TRUE(server.Start("--tick-ms 20")) << server.Log();
  std::string token = server.AdminToken();
  ASSERT_FALSE(token.empty());
  struct stat st {};
  ASSERT_EQ(::stat((dir / "admin.token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(server.Log().find(token), std::string::npos) << "the token must never be logged";

  auto admin = server.Client(token);
  for (const char* node : {R"({"name":"n1","gpus":{"count":2,"model":"A100","memory":"80Gi"}})",
                           R"({"name":"n2","gpus":{"count":4,"model":"T4","memory":"16Gi"}})"}) {
    auto r = admin->Post("/api/v1/nodes", node, "application/json");
    ASSERT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
  }

  std::map<int64_t, Expect> acked;
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::mutex mu;
    std::atomic<bool> stop{false};
    std::atomic<int> count{0};
    std::vector<std::thread> submitters;
    for (int t = 0; t < 4; ++t) {
      submitters.emplace_back([&, t] {
        auto c = server.Client(token);
        for (int i = 0; !stop; ++i) {
          auto r = c->Post("/api/v1/jobs", kJobs[(i + t) % 4], "application/json");
          if (!r) continue;  // the server is down: keep trying until told to stop
          if (r->status != 201) continue;
          int64_t id = json::parse(r->body)["id"].get<int64_t>();
          {
            std::lock_guard lock(mu);
            acked[id] = Expect::kLive;
          }
          ++count;
          if (i % 5 == 0) {
            {
              std::lock_guard lock(mu);
              acked[id] = Expect::kCancelMaybe;
            }
            auto d = c->Delete(("/api/v1/jobs/" + std::to_string(id)).c_str());
            if (d && d->status == 200) {
              std::lock_guard lock(mu);
              acked[id] = Expect::kCancelled;
            }
          }
        }
      });
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (count < 150 * (round + 1) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    server.Kill9();  // mid-flight: submitters are still posting
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop = true;
    for (auto& s : submitters) s.join();
    ASSERT_GT(count.load(), 0);

    ASSERT_TRUE(server.Start("--tick-ms 20")) << server.Log();
    auto c = server.Client(token);
    int checked = 0;
    for (const auto& [id, expect] : acked) {
      auto r = c->Get(("/api/v1/jobs/" + std::to_string(id)).c_str());
      ASSERT_TRUE(r) << "job " << id;
      ASSERT_EQ(r->status, 200) << "acknowledged job " << id << " was lost: " << r->body;
      std::string state = json::parse(r->body)["state"];
      if (expect == Expect::kCancelled) {
        EXPECT_EQ(state, "cancelled") << "job " << id;
      } else if (expect == Expect::kLive) {
        EXPECT_TRUE(state == "queued" || state == "scheduled" || state == "running") << "job " << id << " " << state;
      }
      ++checked;
    }
    std::printf("round %d: %d acknowledged jobs checked after kill -9\n", round, checked);
    auto nodes = c->Get("/api/v1/nodes");
    ASSERT_TRUE(nodes && nodes->status == 200);
    EXPECT_EQ(json::parse(nodes->body)["nodes"].size(), 2u);
    ExpectAllocationsMatch(*c);
  }
  server.Stop();
  std::filesystem::remove_all(dir);
}

TEST(ServerCliTest, FirstStartTenantTokenSubmitQueuedWithReason) {
  auto dir = TempDir("cli");
  ServerProcess server(XpoolBinary(), dir.string());
  ASSERT_TRUE(server.Start()) << server.Log();
  std::string admin_env =
      "XPOOL_SERVER=" + server.url() + " XPOOL_TOKEN=" + server.AdminToken() + " HOME=" + dir.string();
  int rc = 0;
  RunCli({"tenants", "create", "vision"}, &rc, false, admin_env);
  ASSERT_EQ(rc, 0);
  std::string token = RunCli({"tokens", "create", "--tenant", "vision"}, &rc, false, admin_env);
  ASSERT_EQ(rc, 0);
  while (!token.empty() && token.back() == '\n') token.pop_back();
  ASSERT_EQ(token.rfind("xp", 0), 0u) << token;
  std::filesystem::path job = dir / "job.yaml";
  {
    std::FILE* f = std::fopen(job.c_str(), "w");
    std::fputs("name: train\ncommand: [python, train.py]\nresources:\n  gpu: 1\n  gpumem: 10Gi\n", f);
    std::fclose(f);
  }
  // The user's config file supplies server and token.
  std::filesystem::create_directories(dir / ".config/xpool");
  {
    std::FILE* f = std::fopen((dir / ".config/xpool/config").c_str(), "w");
    std::fprintf(f, "server = %s\ntoken = %s\n", server.url().c_str(), token.c_str());
    std::fclose(f);
  }
  std::string user_env = "HOME=" + dir.string() + " XPOOL_SERVER= XPOOL_TOKEN=";
  std::string submitted = RunCli({"submit", "-f", job.string()}, &rc, false, user_env);
  ASSERT_EQ(rc, 0) << submitted;
  EXPECT_NE(submitted.find("submitted"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // one tick
  std::string table = RunCli({"get", "jobs"}, &rc, false, user_env);
  ASSERT_EQ(rc, 0);
  EXPECT_NE(table.find("ID"), std::string::npos) << table;
  EXPECT_NE(table.find("queued"), std::string::npos) << table;
  EXPECT_NE(table.find("no nodes in the cluster yet"), std::string::npos) << table;
  std::string described = RunCli({"describe", "job", "1"}, &rc, false, user_env);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(described.find("Why pending"), std::string::npos) << described;
  // Errors: unknown job → non-zero; no token → non-zero.
  RunCli({"describe", "job", "999"}, &rc, false, user_env);
  EXPECT_NE(rc, 0);
  RunCli({"get", "jobs"}, &rc, false, "HOME=/nonexistent XPOOL_TOKEN= XPOOL_SERVER=" + server.url());
  EXPECT_NE(rc, 0);
  server.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xpool::testing
