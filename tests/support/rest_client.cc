#include "support/rest_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace xpool::testing {

Json HalfGpuJob(const std::string& name, const std::string& command) {
  return Json{{"name", name},
              {"resources", {{"cpu", "100m"}, {"memory", "64Mi"}, {"gpu", 1}, {"gpumem-percentage", 50}}},
              {"command", command}};
}

RestClient::RestClient(int port, std::string token)
    : token_(std::move(token)), client_(std::make_unique<httplib::Client>("127.0.0.1", port)) {
  client_->set_connection_timeout(2, 0);
  client_->set_read_timeout(10, 0);
}

httplib::Headers RestClient::Auth(const std::string& token) const {
  return {{"Authorization", "Bearer " + (token.empty() ? token_ : token)}};
}

Json RestClient::Get(const std::string& path, const std::string& token) {
  auto r = client_->Get(path.c_str(), Auth(token));
  if (!r || r->status != 200) return Json();
  return Json::parse(r->body, nullptr, /*allow_exceptions=*/false);
}

httplib::Result RestClient::Post(const std::string& path, const std::string& body, const std::string& token) {
  return client_->Post(path.c_str(), Auth(token), body, "application/json");
}

int64_t RestClient::Submit(const Json& spec, const std::string& token) {
  auto r = client_->Post("/api/v1/jobs", Auth(token), spec.dump(), "application/json");
  if (!r || r->status != 201) {
    ADD_FAILURE() << "submit " << spec.dump() << ": " << (r ? r->body : std::string("no answer"));
    return -1;
  }
  const Json body = Json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object() || !body.contains("id") || !body["id"].is_number_integer()) {
    ADD_FAILURE() << "submit " << spec.dump() << ": no id in " << r->body;
    return -1;
  }
  return body["id"].get<int64_t>();
}

Json RestClient::Job(int64_t id) { return Get("/api/v1/jobs/" + std::to_string(id)); }

std::string RestClient::Events(int64_t id) {
  const Json e = Get("/api/v1/jobs/" + std::to_string(id) + "/events");
  return e.is_object() ? e.dump() : "";
}

Json RestClient::WaitFor(int64_t id, const std::string& what, const std::function<bool(const Json&)>& ok, int seconds) {
  Json j;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds > 0 ? seconds : default_wait_seconds_);
  while (std::chrono::steady_clock::now() < deadline) {
    j = Job(id);
    if (j.is_object() && ok(j)) return j;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "job " << id << " never became " << what << ": " << j.dump() << "\nevents: " << Events(id) << "\n"
                << (diagnostics_ ? diagnostics_() : std::string());
  return j;
}

Json RestClient::WaitState(int64_t id, const std::string& state, int seconds) {
  return WaitFor(
      id, state, [&](const Json& j) { return j.value("state", "") == state; }, seconds);
}

std::string RestClient::TenantWithToken(const Json& tenant) {
  const std::string name = tenant.value("name", "");
  auto created = client_->Post("/api/v1/tenants", Auth(), tenant.dump(), "application/json");
  if (!created || created->status != 201) {
    ADD_FAILURE() << "create tenant " << tenant.dump() << ": " << (created ? created->body : "no answer");
    return "";
  }
  auto tok = client_->Post(("/api/v1/tenants/" + name + "/tokens").c_str(), Auth(), "{}", "application/json");
  const Json body = tok ? Json::parse(tok->body, nullptr, /*allow_exceptions=*/false) : Json();
  if (!tok || tok->status != 201 || !body.is_object() || !body.contains("token") || !body["token"].is_string()) {
    ADD_FAILURE() << "token for tenant " << name << ": " << (tok ? tok->body : "no answer");
    return "";
  }
  return body["token"].get<std::string>();
}

}  // namespace xpool::testing
