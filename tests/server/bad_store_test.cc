// End-to-end: the real `xpool server` binary when its store refuses writes and when a body is too large.
// - A SQLite store capped with `--store sqlite:DIR/xpool.db?max_size_mib=1` fills up: submissions answer 503 with
//   the reason, reads (list, get, events, nodes, healthz) keep answering 200, nothing crashes, and after a restart
//   without the cap every job that got a 201 is there and new submissions land again.
// - A body over --max-body answers 413 with a JSON error, and the server keeps serving.
// - A second server on a port in use exits with "address already in use" (no SO_REUSEPORT sharing).
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/xpool_process.h"

namespace xpool::testing {
namespace {

using nlohmann::json;

// A valid job of about 240 KB (8 env values of 30,000 bytes; the limit is 32 KiB each).
std::string BigJob(int n) {
  json job = {{"name", "big-" + std::to_string(n)}, {"command", {"true"}}, {"resources", {{"cpu", 1}}}};
  for (int i = 0; i < 8; ++i) job["env"]["PAD" + std::to_string(i)] = std::string(30000, static_cast<char>('a' + i));
  return job.dump();
}

std::string ErrorCode(const std::string& text) {
  const json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return body.is_object() && body.contains("error") ? body["error"].value("code", "") : "";
}

TEST(ServerBadStoreTest, FullStoreAnswers503AndKeepsServingReads) {
  auto dir = TempDir("full");
  ServerProcess server(XpoolBinary(), dir.string());
  ASSERT_TRUE(server.Start("--store sqlite:" + (dir / "xpool.db").string() + "?max_size_mib=1")) << server.Log();
  auto c = server.Client(server.AdminToken());

  std::vector<int64_t> accepted;
  std::string refused;  // the body of the first refusal
  for (int i = 0; i < 40; ++i) {
    auto r = c->Post("/api/v1/jobs", BigJob(i), "application/json");
    ASSERT_TRUE(r) << "no answer to submission " << i << "\n" << server.Log();
    if (r->status == 201) {
      accepted.push_back(json::parse(r->body)["id"].get<int64_t>());
      continue;
    }
    ASSERT_EQ(r->status, 503) << r->body;
    refused = r->body;
    break;
  }
  ASSERT_FALSE(refused.empty()) << "the 1 MiB store never filled up";
  ASSERT_GE(accepted.size(), 1u);
  EXPECT_EQ(ErrorCode(refused), "UNAVAILABLE") << refused;
  EXPECT_NE(refused.find("database is full"), std::string::npos) << refused;
  // Still refused, still answering.
  auto again = c->Post("/api/v1/jobs", BigJob(99), "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 503) << again->body;

  // Reads keep working.
  auto list = c->Get("/api/v1/jobs");
  ASSERT_TRUE(list);
  ASSERT_EQ(list->status, 200) << list->body;
  EXPECT_EQ(json::parse(list->body)["jobs"].size(), accepted.size());
  for (int64_t id : accepted) {
    auto one = c->Get(("/api/v1/jobs/" + std::to_string(id)).c_str());
    ASSERT_TRUE(one);
    EXPECT_EQ(one->status, 200) << one->body;
    auto events = c->Get(("/api/v1/jobs/" + std::to_string(id) + "/events").c_str());
    ASSERT_TRUE(events);
    EXPECT_EQ(events->status, 200) << events->body;
  }
  for (const char* path : {"/api/v1/nodes", "/healthz", "/metrics"}) {
    auto r = c->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
  }
  ASSERT_TRUE(server.running());
  server.Stop();

  // Without the cap the same database takes writes again and kept every acknowledged job.
  ASSERT_TRUE(server.Start()) << server.Log();
  c = server.Client(server.AdminToken());
  auto after = c->Get("/api/v1/jobs");
  ASSERT_TRUE(after && after->status == 200);
  EXPECT_EQ(json::parse(after->body)["jobs"].size(), accepted.size());
  auto more = c->Post("/api/v1/jobs", BigJob(100), "application/json");
  ASSERT_TRUE(more);
  EXPECT_EQ(more->status, 201) << more->body;
  server.Stop();
  std::filesystem::remove_all(dir);
}

TEST(ServerBadStoreTest, OversizedBodyIs413AndTheServerKeepsServing) {
  auto dir = TempDir("big_body");
  ServerProcess server(XpoolBinary(), dir.string());
  ASSERT_TRUE(server.Start("--max-body 65536")) << server.Log();
  auto c = server.Client(server.AdminToken());
  auto r = c->Post("/api/v1/jobs", BigJob(1), "application/json");  // ~240 KB
  ASSERT_TRUE(r) << server.Log();
  EXPECT_EQ(r->status, 413) << r->body;
  EXPECT_EQ(ErrorCode(r->body), "RESOURCE_EXHAUSTED") << r->body;
  EXPECT_NE(r->body.find("65536"), std::string::npos) << r->body;
  // The same body without a token is refused too, and a normal request still works afterwards.
  auto anonymous = server.Client("");
  auto a = anonymous->Post("/api/v1/jobs", BigJob(2), "application/json");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->status == 413 || a->status == 401) << a->status;
  auto ok =
      server.Client(server.AdminToken())
          ->Post("/api/v1/jobs", R"({"name":"small","command":["true"],"resources":{"cpu":1}})", "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 201) << ok->body;
  server.Stop();
  std::filesystem::remove_all(dir);
}

// Debian's httplib sets SO_REUSEPORT: a second server on the same port used to start and steal connections.
TEST(ServerBadStoreTest, ASecondServerOnTheSamePortFailsWithAClearError) {
  auto dir = TempDir("same_port");
  std::filesystem::create_directories(dir / "first");
  std::filesystem::create_directories(dir / "second");
  ServerProcess first(XpoolBinary(), (dir / "first").string());
  ASSERT_TRUE(first.Start()) << first.Log();
  int code = 0;
  // `timeout`: without the fix the second server would serve (and never exit).
  const std::string out = RunCli({"server", "--listen", "127.0.0.1:" + std::to_string(first.port()), "--state-dir",
                                  (dir / "second").string(), "--agent-listen", "off"},
                                 &code, /*with_stderr=*/true, "timeout 30");
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(code, 124) << "the second server kept running:\n" << out;
  EXPECT_NE(out.find("address already in use"), std::string::npos) << out;
  // The first one still answers.
  auto r = first.Client(first.AdminToken())->Get("/api/v1/jobs");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  first.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xpool::testing
