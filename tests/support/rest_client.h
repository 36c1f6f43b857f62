#pragma once
// RestClient: the REST calls the end-to-end tests make against a running xpool server (`xpool up` or
// `xpool server`, started with support/xpool_process.h): authenticated GET, submit a job, read a job and its
// events, wait until a job reaches a state, create a tenant with a token. Failures are reported to gtest
// (ADD_FAILURE) with the job's last JSON, its events and the test's diagnostics (the logs of the processes under
// test), and the call returns a value the test can go on with. Library xpool_test_support.
// Owned by one test; not thread-safe.
//
// It includes httplib and nlohmann/json: only end-to-end tests include it, and they use both.
#include <httplib.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace xpool::testing {

using Json = nlohmann::json;

// The spec of a job asking for half a GPU (100m CPU, 64Mi, one device at gpumem-percentage 50) running
// `command` through the shell.
Json HalfGpuJob(const std::string& name, const std::string& command);

class RestClient {
 public:
  // A client of http://127.0.0.1:PORT sending `token` unless a call names another; 2 s to connect, 10 s to read.
  RestClient(int port, std::string token);
  RestClient(const RestClient&) = delete;
  RestClient& operator=(const RestClient&) = delete;

  // The underlying client, for the calls this class has no helper for.
  httplib::Client& http() { return *client_; }
  const std::string& token() const { return token_; }
  // "Authorization: Bearer TOKEN", this client's token when `token` is empty.
  httplib::Headers Auth(const std::string& token = "") const;

  // Text appended to every failure message (e.g. the server's log), read when a failure is reported.
  void set_diagnostics(std::function<std::string()> diagnostics) { diagnostics_ = std::move(diagnostics); }
  // How long WaitState / WaitFor wait when not told (20 s unless set).
  void set_default_wait_seconds(int seconds) { default_wait_seconds_ = seconds; }

  // GET PATH: the body parsed as JSON (a discarded value when it is not JSON); null when the answer is not 200.
  Json Get(const std::string& path, const std::string& token = "");
  // POST PATH with a JSON `body` (may be empty).
  httplib::Result Post(const std::string& path, const std::string& body = "", const std::string& token = "");
  // POST /api/v1/jobs: the new job's id; -1 after a test failure naming the job and the answer.
  int64_t Submit(const Json& spec, const std::string& token = "");
  // GET /api/v1/jobs/ID (null when it fails).
  Json Job(int64_t id);
  // GET /api/v1/jobs/ID/events as JSON text ("" when it fails).
  std::string Events(int64_t id);

  // Polls the job every 100 ms until `ok(job)`, at most `seconds` (0: the default wait); returns its last JSON.
  // On timeout: a test failure saying the job never became `what`, with its JSON, events and the diagnostics.
  Json WaitFor(int64_t id, const std::string& what, const std::function<bool(const Json&)>& ok, int seconds = 0);
  // WaitFor the job's "state" to be `state`.
  Json WaitState(int64_t id, const std::string& state, int seconds = 0);

  // POST /api/v1/tenants with `tenant` (its "name" is the tenant), then a token for it: the token; "" after a
  // test failure when either call is not answered 201.
  std::string TenantWithToken(const Json& tenant);

 private:
  std::string token_;
  std::unique_ptr<httplib::Client> client_;
  std::function<std::string()> diagnostics_;
  int default_wait_seconds_ = 20;
};

}  // namespace xpool::testing
