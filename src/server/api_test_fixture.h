#pragma once
// ApiFixture: the server set-up the Api tests share (api_test.cc, agent_grpc_service_test.cc; test-only): a
// SQLite store in a fresh temp dir with the job cache the server reads from in front of it (the control plane and
// the Api use `jobs_`; tests may read `store_` to see what was committed), an admin tenant with a token, the
// metrics the Api declares, a rebuilt ControlPlane on a FakeClock; the test then makes its Api with its own options
// (MakeApi). Call() sends one request through Api::Handle, NewTenant() / NodeToken() create what a test needs through
// the API. Each fixture object is owned by its test; not thread-safe.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/api.h"
#include "store/caching_state_store.h"
#include "store/token.h"

namespace xpool::server {

class ApiFixture : public ::testing::Test {
 protected:
  // The temp dir is TMP/<prefix><pid>_<test name>.
  explicit ApiFixture(const char* dir_prefix) : dir_prefix_(dir_prefix) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / (std::string(dir_prefix_) + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto s = OpenStateStore((dir_ / "xpool.db").string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    auto admin = store_->CreateTenant("admin", true, TenantQuota{}, clock_.NowMicros());
    ASSERT_TRUE(admin.ok());
    auto token = GenerateToken();
    ASSERT_TRUE(token.ok());
    admin_token_ = *token;
    ASSERT_TRUE(store_->AddToken(admin->id, admin_token_, "test", clock_.NowMicros()).ok());
    Api::DeclareMetrics(metrics_);
    ControlPlane::DeclareMetrics(metrics_);
    auto jobs = CachingStateStore::Load(*store_);
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    jobs_ = std::move(*jobs);
    control_ = std::make_unique<ControlPlane>(*jobs_, clock_, &metrics_, ControlPlaneOptions{});
    ASSERT_TRUE(control_->Rebuild().ok());
  }
  void TearDown() override {
    api_.reset();
    control_.reset();
    jobs_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void MakeApi(const ApiOptions& options) {
    api_ = std::make_unique<Api>(*jobs_, *control_, metrics_, clock_, options);
  }

  // METHOD TARGET ("PATH" or "PATH?KEY=VALUE&KEY=VALUE...") with `token` as the bearer token (none when empty).
  ApiResponse Call(const std::string& method, const std::string& target, const std::string& token,
                   const std::string& body = "") {
    return api_->Handle(Request(method, target, token, body));
  }
  // The request Call sends, for a test to add to.
  static ApiRequest Request(const std::string& method, const std::string& target, const std::string& token,
                            const std::string& body = "") {
    ApiRequest r;
    r.method = method;
    size_t q = target.find('?');
    r.path = target.substr(0, q);
    while (q != std::string::npos) {
      const size_t next = target.find('&', q + 1);
      const std::string pair = target.substr(q + 1, next == std::string::npos ? std::string::npos : next - q - 1);
      const size_t eq = pair.find('=');
      r.query[pair.substr(0, eq)] = eq == std::string::npos ? "" : pair.substr(eq + 1);
      q = next;
    }
    if (!token.empty()) r.authorization = "Bearer " + token;
    r.body = body;
    return r;
  }
  static nlohmann::json Body(const ApiResponse& r) { return nlohmann::json::parse(r.body); }

  // Creates a tenant and returns a token for it, through the API.
  std::string NewTenant(const std::string& name) {
    ApiResponse t = Call("POST", "/api/v1/tenants", admin_token_, nlohmann::json{{"name", name}}.dump());
    EXPECT_EQ(t.status, 201) << t.body;
    ApiResponse k = Call("POST", "/api/v1/tenants/" + name + "/tokens", admin_token_, "{}");
    EXPECT_EQ(k.status, 201) << k.body;
    return Body(k)["token"].get<std::string>();
  }
  // A node token for `node`, through the API.
  std::string NodeToken(const std::string& node) {
    ApiResponse r = Call("POST", "/api/v1/nodes/" + node + "/tokens", admin_token_, "{}");
    EXPECT_EQ(r.status, 201) << r.body;
    return Body(r)["token"].get<std::string>();
  }

  const char* dir_prefix_;
  std::filesystem::path dir_;
  FakeClock clock_{1'700'000'000'000'000};
  MetricsRegistry metrics_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<CachingStateStore> jobs_;
  std::unique_ptr<ControlPlane> control_;
  std::unique_ptr<Api> api_;
  std::string admin_token_;
};

}  // namespace xpool::server
