#include "server/api.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "http/gzip.h"
#include "protocol/json_codec.h"
#include "protocol/log_relay.h"
#include "server/agent_service.h"
#include "server/auth.h"
#include "server/compressed_device_series.h"
#include "server/http_status.h"
#include "server/internal/api_impl.h"
#include "server/internal/json_codec.h"
#include "server/usage_history.h"
#include "store/token.h"

namespace xpool::server {
namespace {

using internal::Access;
using internal::ErrorResponse;
using internal::Json;
using internal::JsonResponse;
using internal::kJsonContentType;

// Node tokens belong to this tenant and read "xpn.<node>.<secret>": the node they serve is part of the
// authenticated text, so it cannot be changed without the token failing. They open the agent routes only.
constexpr const char* kNodeTenant = "xpool-nodes";
constexpr const char* kNodeTokenPrefix = "xpn.";

// The node a node token serves; "" when it is not one.
std::string NodeOfToken(const std::string& token) {
  if (token.rfind(kNodeTokenPrefix, 0) != 0) return "";
  const size_t dot = token.rfind('.');
  const size_t start = std::string(kNodeTokenPrefix).size();
  return dot > start ? token.substr(start, dot - start) : "";
}

bool ValidNodeName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : path) {
    if (c == '/') {
      if (!cur.empty()) parts.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) parts.push_back(std::move(cur));
  return parts;
}

}  // namespace

namespace internal {

ApiResponse JsonResponse(int status, const Json& body) {
  return ApiResponse{status, kJsonContentType, body.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

ApiResponse ErrorResponse(const Status& s) { return ApiResponse{HttpStatusFor(s), kJsonContentType, ErrorBody(s)}; }

}  // namespace internal

Result<Api::Impl::Caller> Api::Impl::Authenticate(const ApiRequest& req) {
  auto token = BearerToken(req.authorization);
  if (!token) return UnauthenticatedError("missing bearer token (Authorization: Bearer <token>)");
  std::string hash = Sha256Hex(*token);
  const TimeMicros now = clock.NowMicros();
  {
    std::lock_guard lock(cache_mu);
    auto it = auth_cache.find(hash);
    if (it != auth_cache.end() && it->second.expires_us > now) return WithNode(it->second.tenant, *token);
  }
  auto tenant = store.Authenticate(*token);
  if (!tenant.ok()) {
    if (tenant.status().code() == StatusCode::kUnavailable) return tenant.status();
    return UnauthenticatedError("invalid token");
  }
  std::lock_guard lock(cache_mu);
  if (auth_cache.size() > 10000) auth_cache.clear();
  auth_cache[hash] = CachedAuth{*tenant, now + options.auth_cache_ttl};
  return WithNode(*tenant, *token);
}

Result<Api::Impl::Caller> Api::Impl::WithNode(const TenantRecord& tenant, const std::string& token) {
  Caller caller{tenant, ""};
  if (tenant.name == kNodeTenant && !tenant.admin) {
    caller.node = NodeOfToken(token);
    if (caller.node.empty()) return UnauthenticatedError("invalid node token");
  }
  return caller;
}

Status Api::Impl::CheckNode(const Caller& caller, const std::string& node) {
  if (caller.tenant.admin || caller.node == node) return Status::Ok();
  return PermissionDeniedError("this node token is for node " + caller.node + ", not " + node);
}

std::string Api::Impl::TenantName(TenantId id) {
  {
    std::lock_guard lock(cache_mu);
    auto it = tenant_names.find(id.value());
    if (it != tenant_names.end()) return it->second;
  }
  auto t = store.GetTenant(id);
  if (!t.ok()) return id.ToString();
  std::lock_guard lock(cache_mu);
  tenant_names[id.value()] = t->name;
  return t->name;
}

Result<int64_t> Api::Impl::ParseNonNegativeIntText(const std::string& text) {
  if (text.empty() || text.size() > 18) return InvalidArgumentError("not a number");
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return InvalidArgumentError("not a number");
    v = v * 10 + (c - '0');
  }
  return v;
}

Result<ApiResponse> Api::Impl::ListNodes(const ApiRequest& req, const Caller&, const Params&) {
  internal::NodePage page;
  if (auto it = req.query.find("limit"); it != req.query.end()) {
    auto v = ParseNonNegativeIntText(it->second);
    if (!v.ok() || *v < 1 || *v > 100000) return InvalidArgumentError("limit must be 1..100000");
    page.limit = static_cast<int>(*v);
  }
  if (auto it = req.query.find("cursor"); it != req.query.end()) {
    ASSIGN_OR_RETURN(page.after, internal::DecodeNodeCursor(it->second));
  }
  const bool gzip = http::AcceptsGzip(req.accept_encoding);
  ApiResponse r(200, internal::kJsonContentType, node_list.Render(control, page, gzip));
  r.headers.emplace_back("Vary", "Accept-Encoding");
  if (gzip) r.headers.emplace_back("Content-Encoding", "gzip");
  return r;
}

Result<ApiResponse> Api::Impl::GetNode(const ApiRequest&, const Caller&, const Params& p) {
  ASSIGN_OR_RETURN(NodeView v, control.GetNode(p[0]));
  return JsonResponse(200, internal::NodeViewToJson(v));
}

Result<ApiResponse> Api::Impl::RegisterNode(const ApiRequest& req, const Caller& caller, const Params&) {
  ASSIGN_OR_RETURN(Json body, internal::ParseJsonObject(req.body));
  ASSIGN_OR_RETURN(Node node, internal::NodeFromJson(body));
  std::string name = node.name;
  RETURN_IF_ERROR(CheckNode(caller, name));
  auto agent = req.query.find("agent");
  if (!caller.node.empty() || (agent != req.query.end() && agent->second == "1")) {
    RETURN_IF_ERROR(RegisterAgent(std::move(node)));
  } else {
    RETURN_IF_ERROR(control.RegisterNode(std::move(node)));
  }
  ASSIGN_OR_RETURN(NodeView v, control.GetNode(name));
  return JsonResponse(201, internal::NodeViewToJson(v));
}

Result<ApiResponse> Api::Impl::Heartbeat(const ApiRequest& req, const Caller& caller, const Params& p) {
  RETURN_IF_ERROR(CheckNode(caller, p[0]));
  ASSIGN_OR_RETURN(protocol::HeartbeatRequest beat, protocol::ParseHeartbeatBody(req.body));
  if (!beat.has_tasks || options.agents == nullptr) {
    RETURN_IF_ERROR(control.Heartbeat(p[0]));
    return JsonResponse(200, Json{{"name", p[0]}, {"ok", true}});
  }
  ASSIGN_OR_RETURN(protocol::HeartbeatReply reply, AgentBeat(p[0], beat));
  // No change feed over HTTP: these agents learn of new work only by heartbeating, so they keep the 0.5 s pace.
  reply.interval_micros = std::min<TimeMicros>(reply.interval_micros, kMicrosPerSecond / 2);
  return ApiResponse{200, kJsonContentType, protocol::HeartbeatReplyBody(reply)};
}

Status Api::Impl::RegisterAgent(Node node) {
  if (node.simulated) node.labels["xpool.io/simulated"] = "true";
  if (options.agents != nullptr) return options.agents->Register(node);
  node.simulated = false;
  return control.RegisterNode(std::move(node));
}

Result<protocol::HeartbeatReply> Api::Impl::AgentBeat(const std::string& node, const protocol::HeartbeatRequest& beat) {
  if (options.agents == nullptr) return FailedPreconditionError("this server does not run agents");
  ASSIGN_OR_RETURN(NodeView view, control.GetNode(node));
  // The agent service keeps the log chunks of the reports it accepts (not those of a stale placement).
  return options.agents->Heartbeat(view.node, beat.tasks, beat.device_usage);
}

void Api::Impl::Count(const std::string& route, const std::string& method, int code,
                      std::chrono::steady_clock::time_point start) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  metrics.CounterAdd("xpool_api_requests_total",
                     {{"route", route}, {"method", method}, {"code", std::to_string(code)}});
  metrics.Observe("xpool_api_request_duration_seconds", {{"route", route}, {"method", method}}, seconds);
}

Status Api::Impl::AuthorizeAgent(const std::string& authorization, const std::string& node) {
  ApiRequest req;
  req.authorization = authorization;
  ASSIGN_OR_RETURN(Caller caller, Authenticate(req));
  if (!caller.tenant.admin && caller.node.empty()) return PermissionDeniedError("this needs an admin or node token");
  return CheckNode(caller, node);
}

Result<ApiResponse> Api::Impl::CreateNodeToken(const ApiRequest&, const Caller&, const Params& p) {
  if (!ValidNodeName(p[0])) return InvalidArgumentError("node name must be 1..253 of [A-Za-z0-9._-]");
  auto t = store.FindTenant(kNodeTenant);
  if (!t.ok() && t.status().code() == StatusCode::kNotFound) {
    t = store.CreateTenant(kNodeTenant, /*admin=*/false, TenantQuota{}, clock.NowMicros());
    if (!t.ok() && t.status().code() == StatusCode::kAlreadyExists) t = store.FindTenant(kNodeTenant);
  }
  if (!t.ok()) return t.status();
  if (t->admin) return FailedPreconditionError(std::string("tenant ") + kNodeTenant + " must not be an admin");
  ASSIGN_OR_RETURN(std::string secret, GenerateToken());
  const std::string token = kNodeTokenPrefix + p[0] + "." + secret;
  ASSIGN_OR_RETURN(int64_t id, store.AddToken(t->id, token, "node " + p[0], clock.NowMicros()));
  return JsonResponse(201, Json{{"id", id}, {"node", p[0]}, {"token", token}});
}

Result<ApiResponse> Api::Impl::Cordon(const ApiRequest&, const Caller&, const Params& p) {
  RETURN_IF_ERROR(control.SetCordoned(p[0], true));
  ASSIGN_OR_RETURN(NodeView v, control.GetNode(p[0]));
  return JsonResponse(200, internal::NodeViewToJson(v));
}

Result<ApiResponse> Api::Impl::Uncordon(const ApiRequest&, const Caller&, const Params& p) {
  RETURN_IF_ERROR(control.SetCordoned(p[0], false));
  ASSIGN_OR_RETURN(NodeView v, control.GetNode(p[0]));
  return JsonResponse(200, internal::NodeViewToJson(v));
}

Result<ApiResponse> Api::Impl::ListTenants(const ApiRequest&, const Caller&, const Params&) {
  ASSIGN_OR_RETURN(std::vector<TenantRecord> tenants, store.ListTenants());
  Json out = {{"tenants", Json::array()}};
  for (const TenantRecord& t : tenants) out["tenants"].push_back(internal::TenantToJson(t));
  return JsonResponse(200, out);
}

Result<ApiResponse> Api::Impl::CreateTenant(const ApiRequest& req, const Caller&, const Params&) {
  ASSIGN_OR_RETURN(Json body, internal::ParseJsonObject(req.body));
  RETURN_IF_ERROR(internal::CheckKeys(body, "", {"name", "quota", "guaranteed", "admin", "priority_quota"}));
  if (!body.contains("name") || !body["name"].is_string()) return InvalidArgumentError("name: a string is required");
  TenantQuota quota;
  if (body.contains("quota")) {
    ASSIGN_OR_RETURN(quota, internal::QuotaFromJson(body["quota"], "quota", quota));
  }
  bool admin = false;
  if (body.contains("admin")) {
    if (!body["admin"].is_boolean()) return InvalidArgumentError("admin must be true or false");
    admin = body["admin"].get<bool>();
  }
  TenantQuota guaranteed;
  if (body.contains("guaranteed")) {
    ASSIGN_OR_RETURN(guaranteed, internal::QuotaFromJson(body["guaranteed"], "guaranteed", guaranteed));
  }
  RETURN_IF_ERROR(internal::CheckGuaranteeWithinQuota(guaranteed, quota));
  std::vector<TenantPriorityQuota> priority_quotas;
  if (body.contains("priority_quota")) {
    ASSIGN_OR_RETURN(priority_quotas, internal::PriorityQuotasFromJson(body["priority_quota"], "priority_quota"));
  }
  ASSIGN_OR_RETURN(TenantRecord t,
                   store.CreateTenant(body["name"].get<std::string>(), admin, quota, clock.NowMicros()));
  if (body.contains("guaranteed")) {
    RETURN_IF_ERROR(store.UpdateTenantGuarantee(t.id, guaranteed));
    t.guaranteed = guaranteed;
  }
  if (!priority_quotas.empty()) {
    RETURN_IF_ERROR(store.SetTenantPriorityQuotas(t.id, priority_quotas));
    t.priority_quotas = priority_quotas;
  }
  return JsonResponse(201, internal::TenantToJson(t));
}

Result<TenantRecord> Api::Impl::NamedTenant(const Caller& caller, const std::string& name) {
  auto t = store.FindTenant(name);
  if (!t.ok() || (!caller.tenant.admin && t->id != caller.tenant.id)) {
    if (t.ok() || t.status().code() == StatusCode::kNotFound) return NotFoundError("tenant " + name + " not found");
    return t.status();
  }
  return t;
}

Result<ApiResponse> Api::Impl::GetTenant(const ApiRequest&, const Caller& caller, const Params& p) {
  ASSIGN_OR_RETURN(TenantRecord t, NamedTenant(caller, p[0]));
  return JsonResponse(200, internal::TenantToJson(t));
}

Result<ApiResponse> Api::Impl::PatchTenant(const ApiRequest& req, const Caller& caller, const Params& p) {
  ASSIGN_OR_RETURN(TenantRecord t, NamedTenant(caller, p[0]));
  ASSIGN_OR_RETURN(Json body, internal::ParseJsonObject(req.body));
  RETURN_IF_ERROR(internal::CheckKeys(body, "", {"name", "quota", "guaranteed", "priority_quota"}));
  if (body.contains("name") && body["name"] != t.name) return InvalidArgumentError("name: tenants cannot be renamed");
  // Both parsed before either is written: a bad "guaranteed" leaves the quota untouched too.
  TenantQuota quota = t.quota;
  TenantQuota guaranteed = t.guaranteed;
  if (body.contains("quota")) {
    ASSIGN_OR_RETURN(quota, internal::QuotaFromJson(body["quota"], "quota", t.quota));
  }
  if (body.contains("guaranteed")) {
    ASSIGN_OR_RETURN(guaranteed, internal::QuotaFromJson(body["guaranteed"], "guaranteed", t.guaranteed));
  }
  RETURN_IF_ERROR(internal::CheckGuaranteeWithinQuota(guaranteed, quota));
  std::vector<TenantPriorityQuota> priority_quotas = t.priority_quotas;
  if (body.contains("priority_quota")) {
    ASSIGN_OR_RETURN(priority_quotas, internal::PriorityQuotasFromJson(body["priority_quota"], "priority_quota"));
  }
  if (body.contains("quota")) {
    RETURN_IF_ERROR(store.UpdateTenantQuota(t.id, quota));
    t.quota = quota;
  }
  if (body.contains("guaranteed")) {
    RETURN_IF_ERROR(store.UpdateTenantGuarantee(t.id, guaranteed));
    t.guaranteed = guaranteed;
  }
  if (body.contains("priority_quota")) {
    RETURN_IF_ERROR(store.SetTenantPriorityQuotas(t.id, priority_quotas));
    t.priority_quotas = priority_quotas;
  }
  return JsonResponse(200, internal::TenantToJson(t));
}

Result<ApiResponse> Api::Impl::CreateToken(const ApiRequest& req, const Caller&, const Params& p) {
  auto t = store.FindTenant(p[0]);
  if (!t.ok())
    return t.status().code() == StatusCode::kNotFound ? NotFoundError("tenant " + p[0] + " not found") : t.status();
  std::string label;
  if (!req.body.empty()) {
    ASSIGN_OR_RETURN(Json body, internal::ParseJsonObject(req.body));
    RETURN_IF_ERROR(internal::CheckKeys(body, "", {"label"}));
    if (body.contains("label")) {
      if (!body["label"].is_string()) return InvalidArgumentError("label must be a string");
      label = body["label"].get<std::string>();
    }
  }
  ASSIGN_OR_RETURN(std::string token, GenerateToken());
  ASSIGN_OR_RETURN(int64_t id, store.AddToken(t->id, token, label, clock.NowMicros()));
  return JsonResponse(201, Json{{"id", id}, {"tenant", t->name}, {"token", token}});
}

Result<ApiResponse> Api::Impl::WhoAmI(const ApiRequest&, const Caller& caller, const Params&) {
  return JsonResponse(200, internal::TenantToJson(caller.tenant));
}

Result<ApiResponse> Api::Impl::UsageHistoryRoute(const ApiRequest& req, const Caller&, const Params&) {
  if (options.usage_history == nullptr) return NotFoundError("this server keeps no usage history");
  TimeMicros since = 0;
  if (auto it = req.query.find("since_us"); it != req.query.end()) {
    auto v = ParseNonNegativeIntText(it->second);
    if (!v.ok()) return InvalidArgumentError("since_us must be a time in microseconds since the epoch");
    since = *v;
  }
  return ApiResponse{200, kJsonContentType, options.usage_history->RenderJson(since)};
}

Result<ApiResponse> Api::Impl::Healthz(const ApiRequest&, const Caller&, const Params&) {
  return ApiResponse{200, "text/plain; charset=utf-8", "ok\n"};
}

Result<ApiResponse> Api::Impl::Readyz(const ApiRequest&, const Caller&, const Params&) {
  RETURN_IF_ERROR(store.Ping());
  return ApiResponse{200, "text/plain; charset=utf-8", "ready\n"};
}

// To a client that takes gzip (Prometheus does), the registry's series compressed now and the device series as
// CompressedDeviceSeries last compressed them, in one gzip member; to others, all rendered now.
Result<ApiResponse> Api::Impl::Metrics(const ApiRequest& request, const Caller&, const Params&) {
  control.ExportGauges(metrics);
  ApiResponse r(200, "text/plain; version=0.0.4; charset=utf-8", metrics.Render());
  r.headers.emplace_back("Vary", "Accept-Encoding");
  if (options.device_series != nullptr && http::AcceptsGzip(request.accept_encoding)) {
    const std::shared_ptr<const http::DeflatedText> devices = options.device_series->Get();
    const http::DeflatedText registry = http::DeflateText(r.body);
    r.body = http::GzipOf({&registry, devices.get()});
    r.headers.emplace_back("Content-Encoding", "gzip");
    return r;
  }
  control.AppendDeviceMetrics(&r.body);
  return r;
}

const std::vector<Api::Impl::Route>& Api::Impl::Routes() {
  using I = Api::Impl;
  static const std::vector<Route> routes = {
      {"GET", "/healthz", Access::kPublic, &I::Healthz, "Liveness: the process answers."},
      {"GET", "/readyz", Access::kPublic, &I::Readyz, "Readiness: the store answers."},
      {"GET", "/metrics", Access::kPublic, &I::Metrics,
       "Prometheus metrics (text exposition format 0.0.4; gzip to Accept-Encoding: gzip)."},
      {"GET", "/api/v1/openapi.json", Access::kPublic, &I::OpenApi, "This description of the API."},
      {"GET", "/api/v1/whoami", Access::kTenant, &I::WhoAmI, "The tenant the token belongs to."},
      {"POST", "/api/v1/jobs", Access::kTenant, &I::SubmitJob,
       "Submit a job (body: job spec, YAML or JSON). 201 {id}."},
      {"POST", "/api/v1/jobs:batch", Access::kTenant, &I::SubmitJobs,
       "Submit many jobs in one transaction (body: {jobs: [spec, ...]}, at most 10,000). 201 {jobs: [{id}]}."},
      {"POST", "/api/v1/jobs:validate", Access::kTenant, &I::ValidateJob,
       "Check a job spec as submit would, storing nothing. 200 {valid, error: {message, line, column}}."},
      {"GET", "/api/v1/jobs", Access::kTenant, &I::ListJobs, "List jobs (query: tenant, state, limit, cursor, after)."},
      {"GET", "/api/v1/jobs/{id}", Access::kTenant, &I::GetJob, "A job: spec, state, placement, why pending."},
      {"DELETE", "/api/v1/jobs/{id}", Access::kTenant, &I::CancelJob, "Cancel a job."},
      {"PATCH", "/api/v1/jobs/{id}", Access::kAdmin, &I::PatchJob,
       "Change a job's priority {priority: 0..100 | low | normal | high} (admin)."},
      {"POST", "/api/v1/jobs/{id}/cancel", Access::kTenant, &I::CancelJob, "Cancel a job."},
      {"POST", "/api/v1/jobs/{id}/suspend", Access::kTenant, &I::SuspendJob, "Suspend (hold) a job."},
      {"POST", "/api/v1/jobs/{id}/resume", Access::kTenant, &I::ResumeJob, "Resume a suspended job."},
      {"GET", "/api/v1/jobs/{id}/events", Access::kTenant, &I::JobEvents, "A job's events, oldest first."},
      {"GET", "/api/v1/jobs/{id}/logs", Access::kTenant, &I::JobLogs,
       "A replica's output (query: replica, offset, limit); `xpool logs`."},
      {"POST", "/api/v1/jobs/{id}/proxy-session", Access::kTenant, &I::CreateProxySession,
       "An interactive job's one-time link to its proxy (/api/v1/jobs/{id}/proxy/). 201 {url, path, expires_us}."},
      {"GET", "/api/v1/nodes", Access::kTenant, &I::ListNodes,
       "Nodes with per-device capacity and allocation, by name (query: limit, cursor; gzip to Accept-Encoding: "
       "gzip)."},
      {"POST", "/api/v1/nodes", Access::kNode, &I::RegisterNode,
       "Register or replace a node (admin, or its node token; ?agent=1: run by an agent)."},
      {"GET", "/api/v1/nodes/{name}", Access::kTenant, &I::GetNode, "One node."},
      {"POST", "/api/v1/nodes/{name}/heartbeat", Access::kNode, &I::Heartbeat,
       "A node reports in; an agent's task reports are answered with its wanted tasks (docs/agent.md)."},
      {"POST", "/api/v1/nodes/{name}/tokens", Access::kAdmin, &I::CreateNodeToken,
       "Create a node token for an agent; shown once (admin)."},
      {"POST", "/api/v1/nodes/{name}/cordon", Access::kAdmin, &I::Cordon, "Stop placing on a node (admin)."},
      {"POST", "/api/v1/nodes/{name}/uncordon", Access::kAdmin, &I::Uncordon, "Place on a node again (admin)."},
      {"GET", "/api/v1/tenants", Access::kAdmin, &I::ListTenants, "List tenants (admin)."},
      {"POST", "/api/v1/tenants", Access::kAdmin, &I::CreateTenant,
       "Create a tenant {name, quota, guaranteed} (admin)."},
      {"GET", "/api/v1/tenants/{name}", Access::kTenant, &I::GetTenant, "A tenant (admin, or the tenant itself)."},
      {"PATCH", "/api/v1/tenants/{name}", Access::kAdmin, &I::PatchTenant,
       "Change a tenant's quota, guarantee and per-priority quota (admin)."},
      {"POST", "/api/v1/tenants/{name}/tokens", Access::kAdmin, &I::CreateToken, "Create a token; shown once (admin)."},
      {"GET", "/api/v1/usage/history", Access::kTenant, &I::UsageHistoryRoute,
       "Cluster allocation over time, a point every 10 s (query: since_us)."},
      {"GET", "/api/v1/usage", Access::kTenant, &I::Usage,
       "GPU-hours allocated and used per tenant, allocation vs measured use over time (query: tenant, since, by=job)."},
  };
  return routes;
}

Result<ApiResponse> Api::Impl::OpenApi(const ApiRequest&, const Caller&, const Params&) {
  Json doc = {{"openapi", "3.0.3"},
              {"info", {{"title", "xpool control plane"}, {"version", "1"}}},
              {"components",
               {{"securitySchemes", {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}},
                {"schemas",
                 {{"Error",
                   {{"type", "object"},
                    {"properties",
                     {{"error",
                       {{"type", "object"},
                        {"properties", {{"code", {{"type", "string"}}}, {"message", {{"type", "string"}}}}}}}}}}}}}}}};
  doc["paths"] = Json::object();
  for (const Route& r : Routes()) {
    std::string method = r.method;
    for (char& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    Json op = {{"summary", r.summary}};
    Json responses = {{"200", {{"description", "OK"}}}};
    if (std::string(r.method) == "POST" &&
        (std::string(r.pattern) == "/api/v1/jobs" || std::string(r.pattern) == "/api/v1/jobs:batch" ||
         std::string(r.pattern) == "/api/v1/nodes" || std::string(r.pattern) == "/api/v1/tenants" ||
         std::string(r.pattern).ends_with("/tokens") || std::string(r.pattern).ends_with("/proxy-session"))) {
      responses = {{"201", {{"description", "Created"}}}};
    }
    Json err = {{"description", "error"},
                {"content", {{"application/json", {{"schema", {{"$ref", "#/components/schemas/Error"}}}}}}}};
    for (const char* code : {"400", "404", "409", "413", "503"}) responses[code] = err;
    if (r.access != Access::kPublic) {
      op["security"] = Json::array({{{"bearer", Json::array()}}});
      responses["401"] = err;
    }
    if (r.access == Access::kAdmin) responses["403"] = err;
    op["responses"] = responses;
    Json params = Json::array();
    for (const std::string& seg : Split(r.pattern)) {
      if (seg.front() == '{') {
        params.push_back({{"name", seg.substr(1, seg.size() - 2)},
                          {"in", "path"},
                          {"required", true},
                          {"schema", {{"type", "string"}}}});
      }
    }
    if (!params.empty()) op["parameters"] = params;
    doc["paths"][r.pattern][method] = op;
  }
  return JsonResponse(200, doc);
}

ApiResponse Api::Impl::Dispatch(const ApiRequest& req, std::string* route_name) {
  // Each route's pattern is split once, here, not on every request.
  static const std::vector<std::vector<std::string>> patterns = [] {
    std::vector<std::vector<std::string>> out;
    for (const Route& r : Routes()) out.push_back(Split(r.pattern));
    return out;
  }();
  const std::vector<std::string> parts = Split(req.path);
  bool path_matched = false;
  for (size_t k = 0; k < Routes().size(); ++k) {
    const Route& r = Routes()[k];
    const std::vector<std::string>& pattern = patterns[k];
    if (pattern.size() != parts.size()) continue;
    Params params;
    bool match = true;
    for (size_t i = 0; i < parts.size() && match; ++i) {
      if (pattern[i].front() == '{')
        params.push_back(parts[i]);
      else
        match = pattern[i] == parts[i];
    }
    if (!match) continue;
    path_matched = true;
    if (req.method != r.method) continue;
    *route_name = r.pattern;
    if (req.body.size() > options.max_body_bytes) {
      return ErrorResponse(ResourceExhaustedError("body is " + std::to_string(req.body.size()) +
                                                  " bytes, over the limit of " +
                                                  std::to_string(options.max_body_bytes)));
    }
    Caller caller;
    if (r.access != Access::kPublic) {
      auto who = Authenticate(req);
      if (!who.ok()) return ErrorResponse(who.status());
      caller = std::move(*who);
      if (r.access == Access::kAdmin && !caller.tenant.admin) {
        return ErrorResponse(PermissionDeniedError("this needs an admin token"));
      }
      if (r.access == Access::kNode && !caller.tenant.admin && caller.node.empty()) {
        return ErrorResponse(PermissionDeniedError("this needs an admin or node token"));
      }
      if (r.access != Access::kNode && !caller.node.empty()) {
        return ErrorResponse(PermissionDeniedError("a node token only serves the agent routes"));
      }
    }
    Result<ApiResponse> out = (this->*r.handler)(req, caller, params);
    if (!out.ok()) return ErrorResponse(out.status());
    return std::move(*out);
  }
  *route_name = "unmatched";
  if (path_matched) return ErrorResponse(NotFoundError("method " + req.method + " is not allowed on " + req.path));
  return ErrorResponse(NotFoundError("no route " + req.method + " " + req.path));
}

Api::Api(StateStore& store, ControlPlane& control, MetricsRegistry& metrics, Clock& clock, ApiOptions options)
    : impl_(std::make_unique<Impl>(store, control, metrics, clock, options)) {}

Api::~Api() = default;

void Api::DeclareMetrics(MetricsRegistry& m) {
  m.DeclareCounter("xpool_api_requests_total", "API requests by route, method and HTTP status code.");
  m.DeclareHistogram("xpool_api_request_duration_seconds", "API request latency by route and method.",
                     MetricsRegistry::LatencyBuckets());
}

ApiResponse Api::Handle(const ApiRequest& request) {
  auto start = std::chrono::steady_clock::now();
  std::string route;
  ApiResponse response;
  try {
    response = impl_->Dispatch(request, &route);
  } catch (const std::exception& e) {
    // A bug, never bad input: answer 500 and keep serving.
    response = ErrorResponse(InternalError(std::string("unexpected error: ") + e.what()));
  }
  if (response.status >= 500) {
    // Never log headers or bodies: they can carry tokens.
    std::fprintf(stderr, "xpool server: %s %s -> %d %s\n", request.method.c_str(), route.c_str(), response.status,
                 response.body.c_str());
  }
  impl_->Count(route, request.method, response.status, start);
  return response;
}

Status Api::RegisterAgentNode(const std::string& authorization, Node node) {
  const auto start = std::chrono::steady_clock::now();
  Status s = impl_->AuthorizeAgent(authorization, node.name);
  if (s.ok()) s = impl_->RegisterAgent(std::move(node));
  impl_->Count("/xpool.agent.v1.Agent/Register", "GRPC", s.ok() ? 200 : HttpStatusFor(s), start);
  return s;
}

Result<protocol::HeartbeatReply> Api::AgentHeartbeat(const std::string& authorization, const std::string& node,
                                                     const protocol::HeartbeatRequest& beat) {
  const auto start = std::chrono::steady_clock::now();
  Status s = impl_->AuthorizeAgent(authorization, node);
  Result<protocol::HeartbeatReply> reply = s.ok() ? impl_->AgentBeat(node, beat) : Result<protocol::HeartbeatReply>(s);
  impl_->Count("/xpool.agent.v1.Agent/Heartbeat", "GRPC", reply.ok() ? 200 : HttpStatusFor(reply.status()), start);
  return reply;
}

Result<ChangeFeed*> Api::AgentChanges(const std::string& authorization, const std::string& node) {
  const auto start = std::chrono::steady_clock::now();
  Status s = impl_->AuthorizeAgent(authorization, node);
  impl_->Count("/xpool.agent.v1.Agent/WaitForChange", "GRPC", s.ok() ? 200 : HttpStatusFor(s), start);
  RETURN_IF_ERROR(s);
  return &impl_->control.changes();
}

ApiResponse Api::TooLarge() const {
  return ErrorResponse(
      ResourceExhaustedError("body over the limit of " + std::to_string(impl_->options.max_body_bytes) + " bytes"));
}

}  // namespace xpool::server
