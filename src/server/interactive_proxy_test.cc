// InteractiveProxy and the proxy-session route against a real task stand-in (an http::HttpServer on 127.0.0.1):
// who may reach an interactive job's task (bearer token, one-time link and cookie; 401 / 404 / 409), what the task
// sees, and the ttl and idle-timeout on the fake clock. WebSockets through the whole server: tests/e2e/interactive.
#include "server/interactive_proxy.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "http/http_server.h"
#include "model/node_builder.h"
#include "protocol/task.h"
#include "server/api_test_fixture.h"
#include "server/control_plane.h"
#include "server/proxy_sessions.h"

namespace xpool::server {
namespace {

using nlohmann::json;

// The task: says what it was asked and which headers reached it.
http::HttpResponse Task(http::HttpRequest& r) {
  http::HttpResponse out;
  out.body = r.method + " " + r.target + "\nauthorization=" + std::string(r.Header("authorization")) +
             "\ncookie=" + std::string(r.Header("cookie")) + "\nhost=" + std::string(r.Header("host")) +
             "\nprefix=" + std::string(r.Header("x-forwarded-prefix")) + "\nbody=" + r.body;
  out.headers.emplace_back("X-Task", "yes");
  return out;
}

class InteractiveProxyTest : public ApiFixture {
 protected:
  InteractiveProxyTest() : ApiFixture("xpool_proxy_test_") {}
  void SetUp() override {
    ApiFixture::SetUp();
    if (HasFatalFailure()) return;
    sessions_ = std::make_unique<ProxySessions>(clock_);
    ApiOptions options;
    options.proxy_sessions = sessions_.get();
    MakeApi(options);
    proxy_ = std::make_unique<InteractiveProxy>(*api_, *jobs_, *control_, *sessions_);
    http::HttpServerOptions o;
    o.worker_threads = 2;
    task_ = std::make_unique<http::HttpServer>(o, Task);
    Result<int> port = task_->Bind("127.0.0.1", 0);
    ASSERT_TRUE(port.ok());
    task_port_ = *port;
    serving_ = std::thread([this] { (void)task_->Serve(); });
    Node node = MakeNode("n1").WithLabel(protocol::kNodeAddressLabel, "127.0.0.1").Build();
    node.simulated = true;  // no agent: placed jobs run at once
    ASSERT_TRUE(control_->RegisterNode(node).ok());
  }
  void TearDown() override {
    proxy_.reset();
    if (task_) task_->Stop();
    if (serving_.joinable()) serving_.join();
    ApiFixture::TearDown();
  }

  // Submits an interactive job for `token`'s tenant listening on `port` (default: the task's) and runs it.
  std::string RunInteractive(const std::string& token, const std::string& limits = "", int port = 0) {
    const std::string spec =
        "name: nb\nkind: interactive\ninteractive: {port: " + std::to_string(port != 0 ? port : task_port_) + limits +
        "}\nresources: {cpu: 1}\ncommand: [x]\n";
    ApiResponse sub = Call("POST", "/api/v1/jobs", token, spec);
    EXPECT_EQ(sub.status, 201) << sub.body;
    control_->RunPass(true);
    return std::to_string(Body(sub)["id"].get<int64_t>());
  }
  http::HttpResponse Get(const std::string& target, const http::HeaderList& headers = {}) {
    http::HttpRequest r;
    r.method = "GET";
    r.target = target;
    const size_t q = target.find('?');
    r.path = target.substr(0, q);
    r.query = q == std::string::npos ? "" : target.substr(q + 1);
    r.headers = headers;
    r.peer = "127.0.0.1";
    return proxy_->Serve(r);
  }
  static http::HeaderList Bearer(const std::string& token) { return {{"authorization", "Bearer " + token}}; }
  std::string State(const std::string& id) { return Body(Call("GET", "/api/v1/jobs/" + id, admin_token_))["state"]; }

  std::unique_ptr<ProxySessions> sessions_;
  std::unique_ptr<InteractiveProxy> proxy_;
  std::unique_ptr<http::HttpServer> task_;
  int task_port_ = 0;
  std::thread serving_;
};

TEST_F(InteractiveProxyTest, HandlesOnlyProxyPaths) {
  EXPECT_TRUE(InteractiveProxy::Handles("/api/v1/jobs/7/proxy"));
  EXPECT_TRUE(InteractiveProxy::Handles("/api/v1/jobs/7/proxy/"));
  EXPECT_TRUE(InteractiveProxy::Handles("/api/v1/jobs/7/proxy/api/kernels"));
  EXPECT_FALSE(InteractiveProxy::Handles("/api/v1/jobs/7/proxy-session"));
  EXPECT_FALSE(InteractiveProxy::Handles("/api/v1/jobs/7/proxyx"));
  EXPECT_FALSE(InteractiveProxy::Handles("/api/v1/jobs/x/proxy/"));
  EXPECT_FALSE(InteractiveProxy::Handles("/api/v1/jobs/7"));
}

TEST_F(InteractiveProxyTest, BearerTokenReachesTheTaskAndOnlyItsTenants) {
  const std::string alice = NewTenant("alice");
  const std::string bob = NewTenant("bob");
  const std::string id = RunInteractive(alice);
  ASSERT_EQ(State(id), "running");
  const std::string base = "/api/v1/jobs/" + id + "/proxy/";
  http::HttpResponse ok =
      Get(base + "tree?a=1", {{"authorization", "Bearer " + alice}, {"host", "studio:8470"}, {"cookie", "c=1"}});
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_NE(ok.body.find("GET " + base + "tree?a=1\n"), std::string::npos) << ok.body;  // path and query as sent
  EXPECT_NE(ok.body.find("authorization=\n"), std::string::npos) << ok.body;            // the token stays here
  EXPECT_NE(ok.body.find("cookie=c=1\n"), std::string::npos) << ok.body;
  EXPECT_NE(ok.body.find("host=studio:8470\n"), std::string::npos) << ok.body;  // the browser's, for origin checks
  EXPECT_NE(ok.body.find("prefix=" + base + "\n"), std::string::npos) << ok.body;
  EXPECT_EQ(Get(base, Bearer(admin_token_)).status, 200);  // admins see every job
  // Another tenant cannot reach it, nor tell it from a missing job.
  http::HttpResponse other = Get(base, Bearer(bob));
  EXPECT_EQ(other.status, 404);
  EXPECT_NE(other.body.find("job " + id + " not found"), std::string::npos) << other.body;
  EXPECT_NE(Get("/api/v1/jobs/99999/proxy/", Bearer(bob)).body.find("job 99999 not found"), std::string::npos);
  EXPECT_EQ(Get(base).status, 401);
  EXPECT_EQ(Get(base, Bearer("xp_wrong")).status, 401);
  http::HttpResponse bare = Get("/api/v1/jobs/" + id + "/proxy?x=1");
  EXPECT_EQ(bare.status, 308);
  ASSERT_FALSE(bare.headers.empty());
  EXPECT_EQ(bare.headers[0].second, base + "?x=1");
}

TEST_F(InteractiveProxyTest, OneTimeLinkSetsACookieForItsJobOnly) {
  const std::string alice = NewTenant("alice");
  const std::string bob = NewTenant("bob");
  const std::string id = RunInteractive(alice);
  const std::string other_id = RunInteractive(alice);
  EXPECT_EQ(Call("POST", "/api/v1/jobs/" + id + "/proxy-session", "").status, 401);
  EXPECT_EQ(Call("POST", "/api/v1/jobs/" + id + "/proxy-session", bob).status, 404);
  ApiResponse created = Call("POST", "/api/v1/jobs/" + id + "/proxy-session", alice);
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string url = Body(created)["url"];
  const std::string base = "/api/v1/jobs/" + id + "/proxy/";
  EXPECT_EQ(url.rfind(base + "?xpool-session=", 0), 0u) << url;
  http::HttpResponse redeemed = Get(url + "&next=tree");
  ASSERT_EQ(redeemed.status, 303) << redeemed.body;
  std::string location, cookie;
  for (const auto& [k, v] : redeemed.headers) {
    if (k == "Location") location = v;
    if (k == "Set-Cookie") cookie = v;
  }
  EXPECT_EQ(location, base + "?next=tree");  // the spent code is dropped
  ASSERT_EQ(cookie.rfind("xpool-proxy-" + id + "=", 0), 0u) << cookie;
  EXPECT_NE(cookie.find("; Path=" + base + ";"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos) << cookie;
  EXPECT_EQ(Get(url).status, 401);  // one use only
  const std::string pair = cookie.substr(0, cookie.find(';'));
  http::HttpResponse through = Get(base + "lab", {{"cookie", "theirs=1; " + pair}});
  ASSERT_EQ(through.status, 200) << through.body;
  EXPECT_NE(through.body.find("cookie=theirs=1\n"), std::string::npos) << through.body;  // ours is not passed on
  // The same session id under the other job's cookie name opens nothing.
  const std::string moved = "xpool-proxy-" + other_id + pair.substr(pair.find('='));
  EXPECT_EQ(Get("/api/v1/jobs/" + other_id + "/proxy/", {{"cookie", moved}}).status, 401);
  clock_.Advance(13 * 3600 * kMicrosPerSecond);  // past the session's 12 h
  EXPECT_EQ(Get(base, {{"cookie", pair}}).status, 401);
}

TEST_F(InteractiveProxyTest, OnlyRunningInteractiveJobsAndATaskThatAnswers) {
  const std::string alice = NewTenant("alice");
  ApiResponse batch = Call("POST", "/api/v1/jobs", alice, "name: b\nresources: {cpu: 1}\ncommand: [x]\n");
  ASSERT_EQ(batch.status, 201);
  const std::string batch_id = std::to_string(Body(batch)["id"].get<int64_t>());
  EXPECT_EQ(Get("/api/v1/jobs/" + batch_id + "/proxy/", Bearer(alice)).status, 409);
  EXPECT_EQ(Call("POST", "/api/v1/jobs/" + batch_id + "/proxy-session", alice).status, 409);
  const std::string id = RunInteractive(alice);
  ASSERT_EQ(Call("POST", "/api/v1/jobs/" + id + "/suspend", alice).status, 200);
  http::HttpResponse held = Get("/api/v1/jobs/" + id + "/proxy/", Bearer(alice));
  EXPECT_EQ(held.status, 409);
  EXPECT_NE(held.body.find("its proxy opens while it runs"), std::string::npos) << held.body;
  // A task that does not listen (yet): 502.
  task_->Stop();
  serving_.join();
  const std::string silent = RunInteractive(alice, "", task_port_);
  EXPECT_EQ(Get("/api/v1/jobs/" + silent + "/proxy/", Bearer(alice)).status, 502);
}

TEST_F(InteractiveProxyTest, TtlAndIdleTimeoutEndTheJobOnTheFakeClock) {
  const std::string alice = NewTenant("alice");
  const std::string idle = RunInteractive(alice, ", ttl: 8h, idle-timeout: 30m");
  const std::string ttl = RunInteractive(alice, ", ttl: 1h, idle-timeout: 0");
  const TimeMicros minute = 60 * kMicrosPerSecond;
  clock_.Advance(29 * minute);
  EXPECT_EQ(control_->CheckInteractiveLimits(), 0);
  EXPECT_EQ(Get("/api/v1/jobs/" + idle + "/proxy/", Bearer(alice)).status, 200);  // traffic: the idle clock restarts
  clock_.Advance(29 * minute);
  EXPECT_EQ(control_->CheckInteractiveLimits(), 0);  // 58 min since the start, 29 since the traffic
  clock_.Advance(2 * minute);
  EXPECT_EQ(control_->CheckInteractiveLimits(), 2);  // 31 min idle; and 60 min for the 1 h ttl
  EXPECT_EQ(State(idle), "cancelled");
  EXPECT_EQ(State(ttl), "cancelled");
  json events = Body(Call("GET", "/api/v1/jobs/" + idle + "/events", alice))["events"];
  EXPECT_NE(events.dump().find("idle for 30m (no traffic through the proxy)"), std::string::npos) << events.dump();
  events = Body(Call("GET", "/api/v1/jobs/" + ttl + "/events", alice))["events"];
  EXPECT_NE(events.dump().find("interactive ttl 1h reached"), std::string::npos) << events.dump();
  EXPECT_EQ(control_->CheckInteractiveLimits(), 0);
}

}  // namespace
}  // namespace xpool::server
