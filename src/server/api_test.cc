#include "server/api.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_test_fixture.h"
#include "store/token.h"

namespace xpool::server {
namespace {

using nlohmann::json;

class ApiTest : public ApiFixture {
 protected:
  ApiTest() : ApiFixture("xpool_api_test_") {}
  void SetUp() override {
    ApiFixture::SetUp();
    if (HasFatalFailure()) return;
    ApiOptions options;
    options.max_body_bytes = 4096;
    MakeApi(options);
  }
};

constexpr const char* kJob = R"(name: train
command: ["python", "train.py"]
resources:
  gpu: 1
  gpumem: 4Gi
)";

TEST_F(ApiTest, PublicEndpointsNeedNoToken) {
  EXPECT_EQ(Call("GET", "/healthz", "").status, 200);
  EXPECT_EQ(Call("GET", "/readyz", "").status, 200);
  ApiResponse m = Call("GET", "/metrics", "");
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.content_type.find("text/plain; version=0.0.4"), std::string::npos);
  ApiResponse o = Call("GET", "/api/v1/openapi.json", "");
  ASSERT_EQ(o.status, 200);
  EXPECT_TRUE(Body(o)["paths"].contains("/api/v1/jobs/{id}"));
}

TEST_F(ApiTest, TokensAreRequired) {
  EXPECT_EQ(Call("GET", "/api/v1/jobs", "").status, 401);
  EXPECT_EQ(Call("GET", "/api/v1/jobs", "xp_wrong").status, 401);
  EXPECT_EQ(Call("GET", "/api/v1/jobs", admin_token_).status, 200);
}

TEST_F(ApiTest, SubmitShowsQueuedWithReasonAndTenantsAreIsolated) {
  std::string alice = NewTenant("alice");
  std::string bob = NewTenant("bob");
  ApiResponse sub = Call("POST", "/api/v1/jobs", alice, kJob);
  ASSERT_EQ(sub.status, 201) << sub.body;
  std::string id = std::to_string(Body(sub)["id"].get<int64_t>());
  control_->RunPass(true);
  ApiResponse got = Call("GET", "/api/v1/jobs/" + id, alice);
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(Body(got)["state"], "queued");
  EXPECT_EQ(Body(got)["tenant"], "alice");
  EXPECT_EQ(Body(got)["reason"], "no nodes in the cluster yet");
  // Bob cannot see it, and cannot tell it exists.
  ApiResponse other = Call("GET", "/api/v1/jobs/" + id, bob);
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(Body(other)["error"]["message"], "job " + id + " not found");  // exactly what a missing job says
  EXPECT_EQ(Body(Call("GET", "/api/v1/jobs/999999", bob))["error"]["message"], "job 999999 not found");
  EXPECT_EQ(Call("DELETE", "/api/v1/jobs/" + id, bob).status, 404);
  EXPECT_EQ(Body(Call("GET", "/api/v1/jobs", bob))["jobs"].size(), 0u);
  EXPECT_EQ(Body(Call("GET", "/api/v1/jobs", alice))["jobs"].size(), 1u);
  EXPECT_EQ(Call("GET", "/api/v1/jobs/" + id, admin_token_).status, 200);
  // Events: submitted.
  ApiResponse ev = Call("GET", "/api/v1/jobs/" + id + "/events", alice);
  ASSERT_EQ(ev.status, 200);
  EXPECT_GE(Body(ev)["events"].size(), 1u);
  // Tenants are admin-only.
  EXPECT_EQ(Call("GET", "/api/v1/tenants", alice).status, 403);
  EXPECT_EQ(Call("POST", "/api/v1/nodes", alice, R"({"name":"n1"})").status, 403);
  // Cancel, then cancel again is a conflict.
  EXPECT_EQ(Call("DELETE", "/api/v1/jobs/" + id, alice).status, 200);
  EXPECT_EQ(Call("DELETE", "/api/v1/jobs/" + id, alice).status, 409);
}

TEST_F(ApiTest, BadInputIsRefusedWithTheField) {
  ApiResponse unknown = Call("POST", "/api/v1/jobs", admin_token_, "name: x\ncommand: [a]\nresources: {gpus: 1}\n");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(Body(unknown)["error"]["message"].get<std::string>().find("resources.gpus"), std::string::npos)
      << unknown.body;
  EXPECT_EQ(Call("POST", "/api/v1/jobs", admin_token_, "{\"name\": ").status, 400);
  EXPECT_EQ(Call("POST", "/api/v1/jobs", admin_token_, "").status, 400);
  EXPECT_EQ(Call("POST", "/api/v1/jobs", admin_token_, std::string(5000, 'x')).status, 413);
  EXPECT_EQ(Call("POST", "/api/v1/tenants", admin_token_, "[1]").status, 400);
  ApiResponse badq = Call("POST", "/api/v1/tenants", admin_token_, R"({"name":"t","quota":{"gpus":1}})");
  EXPECT_EQ(badq.status, 400);
  EXPECT_NE(badq.body.find("quota.gpus"), std::string::npos) << badq.body;
  ApiResponse badnode =
      Call("POST", "/api/v1/nodes", admin_token_, R"({"name":"n","devices":[{"model":"A","memory":"x"}]})");
  EXPECT_EQ(badnode.status, 400);
  EXPECT_NE(badnode.body.find("devices[0].memory"), std::string::npos) << badnode.body;
  EXPECT_EQ(Call("GET", "/api/v1/jobs/abc", admin_token_).status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/jobs/99999999999999999999999", admin_token_).status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/nodes/nope", admin_token_).status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/nope", admin_token_).status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/jobs?state=bogus", admin_token_).status, 400);
  EXPECT_EQ(Call("POST", "/api/v1/tenants", admin_token_, R"({"name":"dup"})").status, 201);
  EXPECT_EQ(Call("POST", "/api/v1/tenants", admin_token_, R"({"name":"dup"})").status, 409);
}

TEST_F(ApiTest, TenantGuaranteeIsSetShownAndChecked) {
  ApiResponse created = Call("POST", "/api/v1/tenants", admin_token_,
                             R"({"name":"g","quota":{"devices":4},"guaranteed":{"devices":2,"cpu":"8"}})");
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(Body(created)["guaranteed"]["devices"], 2);
  EXPECT_EQ(Body(created)["guaranteed"]["cpu_milli"], 8000) << created.body;
  EXPECT_EQ(Body(Call("GET", "/api/v1/tenants/g", admin_token_))["guaranteed"]["devices"], 2);

  // Above the limit of the same resource: refused with both fields named, nothing changed.
  ApiResponse above = Call("PATCH", "/api/v1/tenants/g", admin_token_, R"({"guaranteed":{"devices":5}})");
  EXPECT_EQ(above.status, 400);
  EXPECT_NE(above.body.find("guaranteed.devices (5) is above quota.devices (4)"), std::string::npos) << above.body;
  ApiResponse lower = Call("PATCH", "/api/v1/tenants/g", admin_token_, R"({"quota":{"devices":1}})");
  EXPECT_EQ(lower.status, 400) << "a limit below the guarantee";
  EXPECT_EQ(Body(Call("GET", "/api/v1/tenants/g", admin_token_))["quota"]["devices"], 4);
  EXPECT_EQ(Call("POST", "/api/v1/tenants", admin_token_, R"({"name":"h","guaranteed":{"gpus":1}})").status, 400);

  ApiResponse patched = Call("PATCH", "/api/v1/tenants/g", admin_token_, R"({"guaranteed":{"devices":-1}})");
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_FALSE(Body(Call("GET", "/api/v1/tenants/g", admin_token_))["guaranteed"].contains("devices"));
}

// GET /api/v1/nodes lists nodes by name, whole or a page at a time (limit, then next_cursor passed back as given);
// a node that joins while a client pages shows up on a later page when its name sorts after the pages read.
TEST_F(ApiTest, NodesComeByNameAPageAtATime) {
  for (const char* name : {"n3", "n1", "n5", "n2", "n4"}) {
    ASSERT_EQ(Call("POST", "/api/v1/nodes", admin_token_,
                   std::string(R"({"name":")") + name + R"(","cpu":8,"memory":"16Gi"})")
                  .status,
              201);
  }
  const auto names = [](const json& list) {
    std::string out;
    for (const json& n : list["nodes"]) out += n["name"].get<std::string>() + " ";
    return out;
  };
  const json all = Body(Call("GET", "/api/v1/nodes", admin_token_));
  EXPECT_EQ(names(all), "n1 n2 n3 n4 n5 ");
  EXPECT_FALSE(all.contains("next_cursor"));
  const std::string alice = NewTenant("alice");
  EXPECT_EQ(Call("GET", "/api/v1/nodes?limit=2", "").status, 401);
  const json first = Body(Call("GET", "/api/v1/nodes?limit=2", alice));
  EXPECT_EQ(names(first), "n1 n2 ");
  EXPECT_EQ(first["nodes"][0], all["nodes"][0]);
  ASSERT_TRUE(first.contains("next_cursor"));
  const json second =
      Body(Call("GET", "/api/v1/nodes?limit=2&cursor=" + first["next_cursor"].get<std::string>(), alice));
  EXPECT_EQ(names(second), "n3 n4 ");
  ASSERT_EQ(Call("POST", "/api/v1/nodes", admin_token_, R"({"name":"n6","cpu":8,"memory":"16Gi"})").status, 201);
  const json third =
      Body(Call("GET", "/api/v1/nodes?limit=2&cursor=" + second["next_cursor"].get<std::string>(), alice));
  EXPECT_EQ(names(third), "n5 n6 ");
  EXPECT_FALSE(third.contains("next_cursor"));
  for (const char* bad : {"?limit=0", "?limit=x", "?cursor=zz", "?cursor=n1.6", "?cursor=n1.6g"}) {
    ApiResponse refused = Call("GET", std::string("/api/v1/nodes") + bad, alice);
    EXPECT_EQ(refused.status, 400) << bad;
    EXPECT_TRUE(Body(refused)["error"]["message"].get<std::string>().starts_with(bad[1] == 'l' ? "limit" : "cursor"))
        << refused.body;
  }
}

TEST_F(ApiTest, RegisteredNodeTakesTheJob) {
  ApiResponse node =
      Call("POST", "/api/v1/nodes", admin_token_,
           R"({"name":"n1","cpu":32,"memory":"128Gi","gpus":{"count":2,"model":"A100","memory":"80Gi"}})");
  ASSERT_EQ(node.status, 201) << node.body;
  EXPECT_EQ(Body(node)["devices"].size(), 2u);
  // The list keeps each node's text between calls: read it before the placement so that it must be renewed.
  json before = Body(Call("GET", "/api/v1/nodes", admin_token_));
  ASSERT_EQ(before["nodes"].size(), 1u);
  EXPECT_EQ(before["nodes"][0]["devices"][0]["memory_allocated_mib"], 0);
  ApiResponse sub = Call("POST", "/api/v1/jobs", admin_token_, kJob);
  ASSERT_EQ(sub.status, 201);
  control_->RunPass(true);
  ApiResponse got = Call("GET", "/api/v1/jobs/" + std::to_string(Body(sub)["id"].get<int64_t>()), admin_token_);
  EXPECT_EQ(Body(got)["state"], "running");
  ASSERT_EQ(Body(got)["placement"].size(), 1u);
  EXPECT_EQ(Body(got)["placement"][0]["node"], "n1");
  json nodes = Body(Call("GET", "/api/v1/nodes", admin_token_));
  int64_t used = 0;
  for (const json& d : nodes["nodes"][0]["devices"]) used += d["memory_allocated_mib"].get<int64_t>();
  EXPECT_EQ(used, 4096);
  EXPECT_EQ(nodes["nodes"][0], Body(Call("GET", "/api/v1/nodes/n1", admin_token_)));
  EXPECT_EQ(Call("POST", "/api/v1/nodes/n1/cordon", admin_token_).status, 200);
  EXPECT_TRUE(Body(Call("GET", "/api/v1/nodes/n1", admin_token_))["cordoned"].get<bool>());
  EXPECT_TRUE(Body(Call("GET", "/api/v1/nodes", admin_token_))["nodes"][0]["cordoned"].get<bool>());
  EXPECT_EQ(Call("POST", "/api/v1/nodes/n1/heartbeat", admin_token_).status, 200);
  // A heartbeat moves only the last-seen time, which the list writes afresh on every call.
  EXPECT_EQ(Body(Call("GET", "/api/v1/nodes", admin_token_))["nodes"][0],
            Body(Call("GET", "/api/v1/nodes/n1", admin_token_)));
}

TEST_F(ApiTest, MetricsSeriesArePresentAtZero) {
  // Before anything happened: the counters read 0, and every tenant's queue length too.
  std::string text = Call("GET", "/metrics", "").body;
  EXPECT_NE(text.find("\nxpool_jobs_submitted_total 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nxpool_placements_total 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("xpool_queue_length{tenant=\"admin\"} 0\n"), std::string::npos) << text;
  // A queued job counts; once the queue empties its tenant's series reads 0 rather than disappearing.
  std::string alice = NewTenant("alice");
  ApiResponse sub = Call("POST", "/api/v1/jobs", alice, kJob);
  ASSERT_EQ(sub.status, 201) << sub.body;
  text = Call("GET", "/metrics", "").body;
  EXPECT_NE(text.find("xpool_queue_length{tenant=\"alice\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nxpool_jobs_submitted_total 1\n"), std::string::npos) << text;
  const std::string id = std::to_string(Body(sub)["id"].get<int64_t>());
  ASSERT_EQ(Call("DELETE", "/api/v1/jobs/" + id, alice).status, 200);
  text = Call("GET", "/metrics", "").body;
  EXPECT_NE(text.find("xpool_queue_length{tenant=\"alice\"} 0\n"), std::string::npos) << text;
}

// Device series in base units with DCGM's and HAMi's labels; preemptions and suspensions counted by cause.
TEST_F(ApiTest, MetricsAreInBaseUnitsAndCountPreemptions) {
  ASSERT_EQ(Call("POST", "/api/v1/nodes", admin_token_,
                 R"({"name":"n1","cpu":32,"memory":"128Gi","gpus":{"count":1,"model":"A100","memory":"80Gi"}})")
                .status,
            201);
  const std::string uuid = Body(Call("GET", "/api/v1/nodes/n1", admin_token_))["devices"][0]["uuid"];
  ASSERT_FALSE(uuid.empty());
  const std::string labels = "{node=\"n1\",Hostname=\"n1\",UUID=\"" + uuid +
                             "\",gpu=\"0\",device=\"nvidia0\",model=\"A100\",deviceuuid=\"" + uuid +
                             "\",deviceidx=\"0\",nodeid=\"n1\"} ";
  std::string text = Call("GET", "/metrics", "").body;
  EXPECT_NE(text.find("xpool_device_memory_capacity_bytes" + labels + "85899345920\n"), std::string::npos) << text;
  EXPECT_NE(text.find("xpool_device_memory_allocated_bytes" + labels + "0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("xpool_device_core_capacity_ratio" + labels + "1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("xpool_device_core_allocated_ratio" + labels + "0\n"), std::string::npos) << text;
  for (const char* zero :
       {"\nxpool_preemptions_total 0\n", "\nxpool_moves_total 0\n", "xpool_suspensions_total{cause=\"scheduler\"} 0\n",
        "xpool_suspensions_total{cause=\"user\"} 0\n"}) {
    EXPECT_NE(text.find(zero), std::string::npos) << zero << text;
  }

  ApiResponse low = Call("POST", "/api/v1/jobs", admin_token_,
                         "name: low\ncommand: [sleep, '99']\nresources: {gpu: 1, gpucores: 25, gpumem: 20Gi}\n"
                         "priority: low\npreemptible: true\n");
  ASSERT_EQ(low.status, 201) << low.body;
  control_->RunPass(true);
  text = Call("GET", "/metrics", "").body;
  EXPECT_NE(text.find("xpool_device_memory_allocated_bytes" + labels + "21474836480\n"), std::string::npos) << text;
  EXPECT_NE(text.find("xpool_device_core_allocated_ratio" + labels + "0.25\n"), std::string::npos) << text;

  clock_.Advance(601 * kMicrosPerSecond);  // past the victim's minimum runtime
  ApiResponse high = Call("POST", "/api/v1/jobs", admin_token_,
                          "name: high\ncommand: [sleep, '99']\nresources: {gpu: 1, gpumem: 70Gi}\npriority: high\n");
  ASSERT_EQ(high.status, 201) << high.body;
  control_->RunPass(true);
  control_->RunPass(true);
  const std::string high_path = "/api/v1/jobs/" + std::to_string(Body(high)["id"].get<int64_t>());
  ASSERT_EQ(Body(Call("GET", high_path, admin_token_))["state"], "running");
  ASSERT_EQ(Call("POST", high_path + "/suspend", admin_token_).status, 200);
  text = Call("GET", "/metrics", "").body;
  EXPECT_NE(text.find("\nxpool_preemptions_total 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("xpool_suspensions_total{cause=\"scheduler\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("xpool_suspensions_total{cause=\"user\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nxpool_moves_total 0\n"), std::string::npos) << text;
}

// The device lines follow each node between scrapes: a node whose usage moved shows it, the others stay as they
// were, a node that joins appears, and each family has one header with every node's devices under it.
TEST_F(ApiTest, DeviceSeriesFollowEachNodesChangesBetweenScrapes) {
  auto add_node = [&](const std::string& name) {
    ASSERT_EQ(Call("POST", "/api/v1/nodes", admin_token_,
                   R"({"name":")" + name +
                       R"(","cpu":32,"memory":"128Gi","gpus":{"count":2,"model":"A100","memory":"80Gi"}})")
                  .status,
              201);
  };
  add_node("n1");
  add_node("n2");
  auto allocated = [](const std::string& text, const std::string& node) {
    std::vector<std::string> values;
    const std::string prefix = "xpool_device_memory_allocated_bytes{node=\"" + node + "\"";
    for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
      const size_t end = text.find('\n', at);
      const std::string line = text.substr(at, end - at);
      values.push_back(line.substr(line.rfind(' ') + 1));
    }
    return values;
  };
  std::string text = Call("GET", "/metrics", "").body;
  EXPECT_EQ(allocated(text, "n1"), (std::vector<std::string>{"0", "0"})) << text;
  EXPECT_EQ(allocated(text, "n2"), (std::vector<std::string>{"0", "0"})) << text;
  ASSERT_EQ(
      Call("POST", "/api/v1/jobs", admin_token_, "name: a\ncommand: [sleep, '99']\nresources: {gpu: 1, gpumem: 10Gi}\n")
          .status,
      201);
  control_->RunPass(true);
  text = Call("GET", "/metrics", "").body;
  const std::vector<std::string> n1 = allocated(text, "n1"), n2 = allocated(text, "n2");
  ASSERT_EQ(n1.size(), 2u);
  ASSERT_EQ(n2.size(), 2u);
  // One device of one node holds 10 GiB; every other device none.
  std::vector<std::string> all = n1;
  all.insert(all.end(), n2.begin(), n2.end());
  EXPECT_EQ(std::count(all.begin(), all.end(), "10737418240"), 1) << text;
  EXPECT_EQ(std::count(all.begin(), all.end(), "0"), 3) << text;
  add_node("n3");
  text = Call("GET", "/metrics", "").body;
  EXPECT_EQ(allocated(text, "n3"), (std::vector<std::string>{"0", "0"})) << text;
  EXPECT_EQ(allocated(text, "n1"), n1) << text;
  EXPECT_EQ(allocated(text, "n2"), n2) << text;
  // Each family: one header, then its six devices' lines before the next family's header.
  const size_t memory_help = text.find("# HELP xpool_device_memory_allocated_bytes");
  const size_t next_help = text.find("# HELP xpool_device_core_capacity_ratio");
  ASSERT_NE(memory_help, std::string::npos);
  ASSERT_LT(memory_help, next_help);
  const std::string block = text.substr(memory_help, next_help - memory_help);
  size_t lines = 0;
  for (size_t at = block.find("\nxpool_device_memory_allocated_bytes{"); at != std::string::npos;
       at = block.find("\nxpool_device_memory_allocated_bytes{", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 6u) << block;
  EXPECT_EQ(text.find("# HELP xpool_device_memory_allocated_bytes", memory_help + 1), std::string::npos);
}

TEST_F(ApiTest, MetricsCountRequestsPerRoute) {
  Call("GET", "/api/v1/jobs", admin_token_);
  Call("GET", "/api/v1/jobs", "");
  std::string text = Call("GET", "/metrics", "").body;
  EXPECT_NE(text.find("# TYPE xpool_api_requests_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("xpool_api_requests_total{route=\"/api/v1/jobs\",method=\"GET\",code=\"401\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("xpool_api_request_duration_seconds_bucket{route=\"/api/v1/jobs\",method=\"GET\",le=\"+Inf\"} 2"),
            std::string::npos)
      << text;
}

}  // namespace
TEST_F(ApiTest, AdminChangesAJobsPriority) {
  std::string alice = NewTenant("alice");
  ApiResponse sub = Call("POST", "/api/v1/jobs", alice, kJob);
  ASSERT_EQ(sub.status, 201) << sub.body;
  const std::string path = "/api/v1/jobs/" + std::to_string(Body(sub)["id"].get<int64_t>());

  ApiResponse up = Call("PATCH", path, admin_token_, R"({"priority": "high"})");
  ASSERT_EQ(up.status, 200) << up.body;
  EXPECT_EQ(Body(up)["priority"], 90);
  ApiResponse num = Call("PATCH", path, admin_token_, R"({"priority": 7})");
  ASSERT_EQ(num.status, 200) << num.body;
  EXPECT_EQ(Body(Call("GET", path, alice))["priority"], 7);
  const std::string events = Call("GET", path + "/events", alice).body;
  EXPECT_NE(events.find("priority 50 -> 90 by admin"), std::string::npos) << events;
  EXPECT_NE(events.find("priority 90 -> 7 by admin"), std::string::npos) << events;

  // Bad values: 400 naming the field; the priority is unchanged.
  for (const char* bad :
       {R"({"priority": 101})", R"({"priority": -1})", R"({"priority": "urgent"})", R"({"priority": 5.5})",
        R"({"priority": null})", R"({})", R"({"priority": 5, "x": 1})", "not json"}) {
    ApiResponse r = Call("PATCH", path, admin_token_, bad);
    EXPECT_EQ(r.status, 400) << bad << " " << r.body;
    const std::string text = bad;
    const std::string field = text == "not json"                        ? "malformed JSON"
                              : text.find("\"x\"") != std::string::npos ? "'x'"
                                                                        : "priority";
    EXPECT_NE(r.body.find(field), std::string::npos) << bad << " " << r.body;
  }
  EXPECT_EQ(Body(Call("GET", path, alice))["priority"], 7);
  // A tenant, even the owner, may not change it (403); an unknown job is 404.
  EXPECT_EQ(Call("PATCH", path, alice, R"({"priority": 100})").status, 403);
  EXPECT_EQ(Call("PATCH", "/api/v1/jobs/9999", admin_token_, R"({"priority": 1})").status, 404);
  // A finished job: 409 with the reason.
  ASSERT_EQ(Call("DELETE", path, alice).status, 200);
  ApiResponse done = Call("PATCH", path, admin_token_, R"({"priority": 1})");
  EXPECT_EQ(done.status, 409) << done.body;
  EXPECT_NE(done.body.find("cancelled"), std::string::npos) << done.body;
  // The route is in the API description, with its 403.
  json doc = Body(Call("GET", "/api/v1/openapi.json", ""));
  EXPECT_TRUE(doc["paths"]["/api/v1/jobs/{id}"].contains("patch"));
  EXPECT_TRUE(doc["paths"]["/api/v1/jobs/{id}"]["patch"]["responses"].contains("403"));
}

// Issue 7's bad input through the API: an unknown tenant is a clear error everywhere; a quota below the
// tenant's current use is accepted and binds new work only (nothing running is stopped).
TEST_F(ApiTest, UnknownTenantAndQuotaBelowCurrentUse) {
  ApiResponse unknown = Call("POST", "/api/v1/jobs", admin_token_, std::string(kJob) + "tenant: nobody\n");
  EXPECT_EQ(unknown.status, 400) << unknown.body;
  EXPECT_NE(unknown.body.find("no tenant named nobody"), std::string::npos) << unknown.body;
  EXPECT_EQ(Call("PATCH", "/api/v1/tenants/nobody", admin_token_, R"({"quota":{"devices":1}})").status, 404);
  EXPECT_EQ(Call("POST", "/api/v1/tenants/nobody/tokens", admin_token_, "{}").status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/jobs?tenant=nobody", admin_token_).status, 400);

  std::string alice = NewTenant("alice");
  ASSERT_EQ(Call("POST", "/api/v1/nodes", admin_token_,
                 R"({"name":"n1","cpu":32,"memory":"128Gi","gpus":{"count":4,"model":"A100","memory":"80Gi"}})")
                .status,
            201);
  const std::string whole = "name: w\ncommand: [sleep, '60']\nresources: {gpu: 1, gpucores: 100}\n";
  std::vector<std::string> running;
  for (int i = 0; i < 2; ++i) {
    ApiResponse sub = Call("POST", "/api/v1/jobs", alice, whole);
    ASSERT_EQ(sub.status, 201) << sub.body;
    running.push_back("/api/v1/jobs/" + std::to_string(Body(sub)["id"].get<int64_t>()));
  }
  control_->RunPass(true);
  for (const std::string& path : running) ASSERT_EQ(Body(Call("GET", path, alice))["state"], "running");
  ApiResponse lowered = Call("PATCH", "/api/v1/tenants/alice", admin_token_, R"({"quota":{"devices":1}})");
  ASSERT_EQ(lowered.status, 200) << lowered.body;  // below the 2 devices in use: accepted
  ApiResponse third = Call("POST", "/api/v1/jobs", alice, whole);
  ASSERT_EQ(third.status, 201) << third.body;
  control_->RunPass(true);
  for (const std::string& path : running) EXPECT_EQ(Body(Call("GET", path, alice))["state"], "running");
  json waiting = Body(Call("GET", "/api/v1/jobs/" + std::to_string(Body(third)["id"].get<int64_t>()), alice));
  EXPECT_EQ(waiting["state"], "queued");
  EXPECT_NE(waiting["reason"].get<std::string>().find("tenant alice at its gpu limit (2/1 devices"), std::string::npos)
      << waiting.dump();
}

TEST_F(ApiTest, PerPriorityQuotaIsSetShownAndEnforced) {
  ApiResponse created = Call("POST", "/api/v1/tenants", admin_token_,
                             R"({"name":"pq","priority_quota":[{"min_priority":"high","max_priority":100,
                                 "quota":{"devices":1}}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(Body(created)["priority_quota"][0]["min_priority"], 90);
  EXPECT_EQ(Body(created)["priority_quota"][0]["quota"]["devices"], 1);
  for (const char* bad : {R"({"priority_quota":[{"min_priority":101,"quota":{}}]})",
                          R"({"priority_quota":[{"min_priority":60,"max_priority":40,"quota":{}}]})",
                          R"({"priority_quota":[{"min_priority":0}]})", R"({"priority_quota":[{"quota":{"gpus":1}}]})",
                          R"({"priority_quota":{"x":1}})"}) {
    ApiResponse r = Call("PATCH", "/api/v1/tenants/pq", admin_token_, bad);
    EXPECT_EQ(r.status, 400) << bad << " " << r.body;
    EXPECT_NE(r.body.find("priority_quota"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Body(Call("GET", "/api/v1/tenants/pq", admin_token_))["priority_quota"].size(), 1u);

  // Enforced: one device at priority 90..100, the rest of the tenant's work is free.
  ApiResponse k = Call("POST", "/api/v1/tenants/pq/tokens", admin_token_, "{}");
  ASSERT_EQ(k.status, 201);
  const std::string pq = Body(k)["token"].get<std::string>();
  ASSERT_EQ(Call("POST", "/api/v1/nodes", admin_token_,
                 R"({"name":"n1","cpu":32,"memory":"128Gi","gpus":{"count":4,"model":"A100","memory":"80Gi"}})")
                .status,
            201);
  std::vector<int64_t> ids;
  for (const char* priority : {"high", "high", "normal"}) {
    ApiResponse sub =
        Call("POST", "/api/v1/jobs", pq,
             std::string("name: j\ncommand: [sleep, '9']\nresources: {gpu: 1, gpucores: 100}\npriority: ") + priority +
                 "\n");
    ASSERT_EQ(sub.status, 201) << sub.body;
    ids.push_back(Body(sub)["id"].get<int64_t>());
  }
  control_->RunPass(true);
  auto job = [&](int64_t id) { return Body(Call("GET", "/api/v1/jobs/" + std::to_string(id), pq)); };
  EXPECT_EQ(job(ids[0])["state"], "running");
  EXPECT_EQ(job(ids[1])["state"], "queued");
  EXPECT_NE(job(ids[1])["reason"].get<std::string>().find("for priority 90..100"), std::string::npos)
      << job(ids[1]).dump();
  EXPECT_EQ(job(ids[2])["state"], "running");
  // Lifted: the waiting one runs.
  ApiResponse lifted = Call("PATCH", "/api/v1/tenants/pq", admin_token_, R"({"priority_quota":[]})");
  ASSERT_EQ(lifted.status, 200) << lifted.body;
  EXPECT_TRUE(Body(lifted)["priority_quota"].empty());
  control_->RunPass(true);
  EXPECT_EQ(job(ids[1])["state"], "running");
}

// POST /api/v1/jobs:batch: many jobs in one transaction; every spec is read and checked first, so one bad spec (or
// a tenant the token may not submit for) refuses the whole batch, names its index, and stores nothing.
TEST_F(ApiTest, BatchSubmitStoresAllOrNothingAndNamesTheBadSpec) {
  const std::string alice = NewTenant("alice");
  NewTenant("bob");
  auto spec = [](const std::string& name) {
    return json{{"name", name}, {"resources", {{"cpu", "100m"}}}, {"command", "true"}};
  };
  auto count = [&] { return Body(Call("GET", "/api/v1/jobs?tenant=alice", admin_token_))["jobs"].size(); };
  ApiResponse r =
      Call("POST", "/api/v1/jobs:batch", alice, json{{"jobs", {spec("a0"), spec("a1"), spec("a2")}}}.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  const json jobs = Body(r)["jobs"];
  ASSERT_EQ(jobs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    json one = Body(Call("GET", "/api/v1/jobs/" + std::to_string(jobs[i]["id"].get<int64_t>()), alice));
    EXPECT_EQ(one["name"], "a" + std::to_string(i));
    EXPECT_EQ(one["tenant"], "alice");
  }
  EXPECT_EQ(count(), 3u);

  json bad = spec("b1");
  bad["resources"]["gpucores"] = 101;
  r = Call("POST", "/api/v1/jobs:batch", alice, json{{"jobs", {spec("b0"), bad}}}.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("jobs[1]"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("gpucores"), std::string::npos) << r.body;
  json other = spec("b2");
  other["tenant"] = "bob";
  r = Call("POST", "/api/v1/jobs:batch", alice, json{{"jobs", {other}}}.dump());
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(r.body.find("jobs[0]"), std::string::npos) << r.body;
  for (const std::string& body : {std::string("{}"), std::string(R"({"jobs": []})"), std::string(R"({"jobs": [1]})"),
                                  std::string(R"({"jobs": [{}], "x": 1})"), std::string("[1]")}) {
    EXPECT_EQ(Call("POST", "/api/v1/jobs:batch", alice, body).status, 400) << body;
  }
  EXPECT_EQ(count(), 3u) << "a refused batch stores nothing";
  EXPECT_EQ(Call("POST", "/api/v1/jobs:batch", "", json{{"jobs", {spec("x")}}}.dump()).status, 401);
}

// GET /api/v1/jobs in pages: next_cursor until the last page; a job submitted while paging comes once, at the end;
// a tenant's pages hold only its jobs, whatever cursor it sends; a string the server did not give is refused.
TEST_F(ApiTest, JobListPagesWithACursorAndKeepsTenantsApart) {
  const std::string alice = NewTenant("alice");
  const std::string bob = NewTenant("bob");
  auto submit = [&](const std::string& token, int n) {
    json specs = json::array();
    for (int i = 0; i < n; ++i) {
      specs.push_back(json{{"name", "j"}, {"resources", {{"cpu", "100m"}}}, {"command", "true"}});
    }
    ApiResponse r = Call("POST", "/api/v1/jobs:batch", token, json{{"jobs", specs}}.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    std::vector<int64_t> ids;
    const json body = Body(r);
    for (const json& j : body["jobs"]) ids.push_back(j["id"].get<int64_t>());
    return ids;
  };
  std::vector<int64_t> want = submit(alice, 3);
  const std::vector<int64_t> bobs = submit(bob, 2);
  for (int64_t id : submit(alice, 2)) want.push_back(id);

  std::vector<int64_t> seen;
  std::string cursor;
  for (int page = 0; page < 10; ++page) {
    ApiResponse r = Call("GET", "/api/v1/jobs?limit=2" + (cursor.empty() ? "" : "&cursor=" + cursor), alice);
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = Body(r);
    EXPECT_LE(body["jobs"].size(), 2u);
    for (const json& j : body["jobs"]) {
      EXPECT_EQ(j["tenant"], "alice");
      seen.push_back(j["id"].get<int64_t>());
    }
    if (page == 0) {
      for (int64_t id : submit(alice, 1)) want.push_back(id);  // while paging
      submit(bob, 1);
    }
    if (!body.contains("next_cursor")) break;
    cursor = body["next_cursor"].get<std::string>();
  }
  EXPECT_EQ(seen, want);
  // A page that holds the rest says so; bob, given alice's cursor, gets his own jobs after it and none of hers.
  EXPECT_FALSE(Body(Call("GET", "/api/v1/jobs?limit=6", alice)).contains("next_cursor"));
  const std::string alices = Body(Call("GET", "/api/v1/jobs?limit=1", alice))["next_cursor"].get<std::string>();
  const json bobs_page = Body(Call("GET", "/api/v1/jobs?cursor=" + alices, bob))["jobs"];
  EXPECT_EQ(bobs_page.size(), bobs.size() + 1);
  for (const json& j : bobs_page) EXPECT_EQ(j["tenant"], "bob");
  EXPECT_EQ(Body(Call("GET", "/api/v1/jobs?tenant=bob", admin_token_))["jobs"].size(), bobs.size() + 1);
  EXPECT_EQ(Body(Call("GET", "/api/v1/jobs?state=queued&limit=100", alice))["jobs"].size(), want.size());
  for (const std::string bad : {"12", "c1.", "c1.xyz", "c2.10", "c1.1234567890abcdef0"}) {
    ApiResponse r = Call("GET", "/api/v1/jobs?cursor=" + bad, alice);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(r.body.find("cursor"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Call("GET", "/api/v1/jobs?after=1&cursor=" + alices, alice).status, 400);
  EXPECT_EQ(Call("GET", "/api/v1/jobs?cursor=" + alices, "").status, 401);

  // An Api over the store itself (no job cache) gives the same answers.
  control_->RunPass(true);
  std::unique_ptr<Api> direct = std::make_unique<Api>(*store_, *control_, metrics_, clock_, ApiOptions{});
  const std::vector<std::string> targets = {"/api/v1/jobs", "/api/v1/jobs?limit=2",
                                            "/api/v1/jobs?limit=2&cursor=" + alices,
                                            "/api/v1/jobs?state=queued&limit=3", "/api/v1/jobs?limit=100&after=2"};
  for (const std::string& target : targets) {
    for (const std::string& token : {alice, bob, admin_token_}) {
      const ApiResponse cached = Call("GET", target, token);
      std::swap(api_, direct);
      const ApiResponse read = Call("GET", target, token);
      std::swap(api_, direct);
      EXPECT_EQ(cached.status, 200) << target;
      EXPECT_EQ(cached.body, read.body) << target;
    }
  }
}

TEST_F(ApiTest, ValidateAnswersAsSubmitWouldWithThePositionAndStoresNothing) {
  const std::string alice = NewTenant("alice");
  auto jobs = [&] { return Body(Call("GET", "/api/v1/jobs", admin_token_))["jobs"].size(); };

  ApiResponse ok = Call("POST", "/api/v1/jobs:validate", alice, kJob);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(Body(ok)["valid"], true);
  EXPECT_EQ(Body(ok)["tenant"], "alice");
  EXPECT_EQ(Body(ok)["spec"]["name"], "train");
  EXPECT_EQ(Body(ok)["spec"]["resources"]["gpumem"], "4096Mi");

  const std::string bad = "name: train\ncommand: [python]\nresources:\n  gpu: 1\n  gpucores: 300\n";
  ApiResponse checked = Call("POST", "/api/v1/jobs:validate", alice, bad);
  ASSERT_EQ(checked.status, 200) << checked.body;
  const json error = Body(checked)["error"];
  EXPECT_EQ(Body(checked)["valid"], false);
  EXPECT_EQ(error["code"], "INVALID_ARGUMENT");
  EXPECT_EQ(error["line"], 5);
  EXPECT_EQ(error["column"], 13);
  ApiResponse submitted = Call("POST", "/api/v1/jobs", alice, bad);
  EXPECT_EQ(submitted.status, 400);
  EXPECT_EQ(Body(submitted)["error"]["message"], error["message"]) << "the same parser, the same words";

  ApiResponse syntax = Call("POST", "/api/v1/jobs:validate", alice, "name: x\nresources: {gpu: 1\n");
  ASSERT_EQ(syntax.status, 200) << syntax.body;
  EXPECT_EQ(Body(syntax)["valid"], false);
  EXPECT_GE(Body(syntax)["error"]["line"].get<int>(), 2) << syntax.body;

  EXPECT_EQ(jobs(), 0u) << "validation stores nothing";
  EXPECT_EQ(Call("POST", "/api/v1/jobs:validate", "", kJob).status, 401);
  EXPECT_EQ(Call("POST", "/api/v1/jobs:validate", "xp_wrong", kJob).status, 401);
  EXPECT_EQ(Call("POST", "/api/v1/jobs:validate", admin_token_, std::string(5000, 'x')).status, 413);
}

// A tenant sees and changes only its own things: jobs, their logs and events, its tenant; another tenant's are
// answered exactly like missing ones, and admin routes are refused.
TEST_F(ApiTest, ATenantSeesOnlyItsOwnThings) {
  const std::string alice = NewTenant("alice");
  const std::string bob = NewTenant("bob");
  ApiResponse sub = Call("POST", "/api/v1/jobs", alice, kJob);
  ASSERT_EQ(sub.status, 201) << sub.body;
  const std::string id = std::to_string(Body(sub)["id"].get<int64_t>());
  const std::string missing = "/api/v1/jobs/424242";
  for (const auto& [method, suffix] : std::vector<std::pair<std::string, std::string>>{{"GET", ""},
                                                                                       {"GET", "/events"},
                                                                                       {"GET", "/logs"},
                                                                                       {"POST", "/suspend"},
                                                                                       {"POST", "/resume"},
                                                                                       {"POST", "/cancel"},
                                                                                       {"DELETE", ""}}) {
    SCOPED_TRACE(method + " " + suffix);
    ApiResponse other = Call(method, "/api/v1/jobs/" + id + suffix, bob);
    EXPECT_EQ(other.status, 404) << other.body;
    EXPECT_EQ(Body(other)["error"]["message"], "job " + id + " not found");
    EXPECT_EQ(Call(method, missing + suffix, bob).status, 404);
  }
  EXPECT_EQ(Call("PATCH", "/api/v1/jobs/" + id, bob, R"({"priority": 90})").status, 403);
  EXPECT_EQ(Body(Call("GET", "/api/v1/jobs", bob))["jobs"].size(), 0u);
  EXPECT_EQ(Body(Call("GET", "/api/v1/jobs?tenant=alice", bob))["jobs"].size(), 0u);
  EXPECT_EQ(Call("GET", "/api/v1/tenants/alice", bob).status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/tenants/bob", bob).status, 200);
  EXPECT_EQ(Call("PATCH", "/api/v1/tenants/bob", bob, R"({"quota": {"devices": 100}})").status, 403);

  // Validation as another tenant: refused like the submit, at the `tenant:` line; the admin may.
  const std::string as_alice = std::string(kJob) + "tenant: alice\n";
  ApiResponse cross = Call("POST", "/api/v1/jobs:validate", bob, as_alice);
  ASSERT_EQ(cross.status, 200) << cross.body;
  EXPECT_EQ(Body(cross)["valid"], false);
  EXPECT_EQ(Body(cross)["error"]["code"], "PERMISSION_DENIED");
  EXPECT_EQ(Body(cross)["error"]["line"], 6);
  EXPECT_EQ(Body(cross)["error"]["column"], 1);
  EXPECT_EQ(Call("POST", "/api/v1/jobs", bob, as_alice).status, 403);
  ApiResponse admin = Call("POST", "/api/v1/jobs:validate", admin_token_, as_alice);
  EXPECT_EQ(Body(admin)["valid"], true) << admin.body;
  EXPECT_EQ(Body(admin)["tenant"], "alice");
  // What alice owns is unchanged by all of the above.
  ApiResponse mine = Call("GET", "/api/v1/jobs/" + id, alice);
  EXPECT_EQ(Body(mine)["state"], "queued");
  EXPECT_EQ(Body(mine)["priority"], 50);
}

}  // namespace xpool::server
