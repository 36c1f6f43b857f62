#pragma once
// Api: the REST API of the control plane (docs/api.md), independent of any HTTP library so it can be tested
// without sockets; http_server.cc adapts it to cpp-httplib.
//
// One route table drives both dispatch and /api/v1/openapi.json. Every handler returns a Status or a body;
// HttpStatusFor (http_status.h) is the only place a Status becomes an HTTP code. Auth: a bearer token per
// request (StateStore::Authenticate, cached briefly by token hash); admin tenants see everything, other tenants
// only their own jobs (others' are 404). Every request is counted and timed per route in the metrics.
//
// Owned by the Server. Thread-safe: Handle() is called from many HTTP worker threads at once.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "server/control_plane.h"
#include "server/metrics.h"
#include "store/state_store.h"

namespace xpool::protocol {
class LogRelay;
struct HeartbeatRequest;
struct HeartbeatReply;
}  // namespace xpool::protocol

namespace xpool::server {

class AgentService;
class CompressedDeviceSeries;
class ProxySessions;
class UsageHistory;

struct ApiRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string
  std::map<std::string, std::string> query;
  std::string authorization;  // the Authorization header, "" when absent
  std::string content_type;
  std::string accept_encoding;  // the Accept-Encoding header, "" when absent (GET /metrics answers gzip to it)
  std::string body;
};

struct ApiResponse {
  ApiResponse() = default;
  ApiResponse(int status_code, std::string type, std::string text)
      : status(status_code), content_type(std::move(type)), body(std::move(text)) {}

  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Content-Encoding, Vary)
};

struct ApiOptions {
  size_t max_body_bytes = 1 << 20;
  TimeMicros auth_cache_ttl = 5'000'000;
  int default_list_limit = 1000;
  const UsageHistory* usage_history = nullptr;  // GET /api/v1/usage/history; null = 404
  // Agents over HTTP (docs/agent.md): heartbeats with task reports are answered with the wanted tasks by
  // `agents` (which keeps their log chunks in the relay it was given); `logs` is read for GET
  // /api/v1/jobs/{id}/logs. Null (tests): heartbeats only mark the node seen, logs are 404.
  AgentService* agents = nullptr;
  protocol::LogRelay* logs = nullptr;
  // POST /api/v1/jobs/{id}/proxy-session (interactive jobs, InteractiveProxy); null = 503.
  ProxySessions* proxy_sessions = nullptr;
  // GET /metrics to a client that takes gzip: the device series from this cache (null: rendered per scrape, and
  // the answer is never compressed).
  CompressedDeviceSeries* device_series = nullptr;
};

class Api {
 public:
  Api(StateStore& store, ControlPlane& control, MetricsRegistry& metrics, Clock& clock, ApiOptions options = {});
  ~Api();

  // The interactive proxy's bearer-token check (InteractiveProxy): the job `id_text` as the caller of
  // `authorization` may see it — Unauthenticated without a valid token, NotFound for another tenant's job
  // exactly as for a missing one (GET /api/v1/jobs/{id}'s rules).
  Result<JobRecord> VisibleJobFor(const std::string& authorization, const std::string& id_text);

  // Declares the API's metric families (once per registry, before serving).
  static void DeclareMetrics(MetricsRegistry& metrics);

  ApiResponse Handle(const ApiRequest& request);

  // The answer for a body over the limit, as the HTTP layer reports it before Handle() sees the request.
  ApiResponse TooLarge() const;

  // The agent protocol for the gRPC listener (agent_grpc_service.h): the same token checks (`authorization` is
  // "Bearer <token>": an admin token or the node's own node token), logic and errors as the HTTP routes
  // POST /api/v1/nodes?agent=1 and POST /api/v1/nodes/{name}/heartbeat.
  Status RegisterAgentNode(const std::string& authorization, Node node);
  Result<protocol::HeartbeatReply> AgentHeartbeat(const std::string& authorization, const std::string& node,
                                                  const protocol::HeartbeatRequest& beat);
  // The WaitForChange long-poll's check (Heartbeat's token check), then the control plane's ChangeFeed that the
  // listener waits on.
  Result<ChangeFeed*> AgentChanges(const std::string& authorization, const std::string& node);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpool::server
