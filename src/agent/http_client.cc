#include "agent/http_client.h"

#include <utility>

#include "common/http_error.h"
#include "http/http_client.h"
#include "protocol/json_codec.h"

namespace xpool::agent {
namespace {

// The server's canonical code (common/http_error.h), with what was asked and the HTTP status in front.
Status ErrorFromResponse(int http_status, const std::string& body, const std::string& what) {
  const Status s = StatusFromHttpError(http_status, body);
  if (s.code() == StatusCode::kUnauthenticated) {
    return UnauthenticatedError(what + ": the server rejected the node token (HTTP 401)");
  }
  return Status(s.code(), what + ": HTTP " + std::to_string(http_status) + ": " + s.message());
}

}  // namespace

HttpControlPlaneClient::HttpControlPlaneClient(HttpClientOptions options) : options_(std::move(options)) {}

Result<std::string> HttpControlPlaneClient::Post(const std::string& path, const std::string& body) {
  http::HttpRequest request;
  request.method = "POST";
  request.target = path;
  request.body = body;
  request.headers.emplace_back("Content-Type", "application/json");
  if (!options_.token.empty()) request.headers.emplace_back("Authorization", "Bearer " + options_.token);
  const int64_t timeout_ms = options_.timeout_micros / 1000;
  Result<http::HttpResponse> res = http::SendHttpRequest(
      options_.server_url, request, http::ClientOptions{.connect_timeout_ms = timeout_ms, .io_timeout_ms = timeout_ms});
  if (!res.ok()) {
    if (res.status().code() == StatusCode::kInvalidArgument) return res.status();
    return UnavailableError("cannot reach the server at " + options_.server_url + " (" + res.status().message() + ")");
  }
  if (res->status < 200 || res->status >= 300) return ErrorFromResponse(res->status, res->body, "POST " + path);
  return res->body;
}

Status HttpControlPlaneClient::Register(const Node& node) {
  // ?agent=1: the node is run by this agent (its jobs wait for the agent's reports).
  return Post("/api/v1/nodes?agent=1", protocol::RegisterBody(node)).status();
}

Result<HeartbeatReply> HttpControlPlaneClient::Heartbeat(const Node& node, const std::vector<TaskReport>& tasks,
                                                         const std::vector<protocol::DeviceUsageSample>& device_usage) {
  ASSIGN_OR_RETURN(std::string body, Post("/api/v1/nodes/" + node.name + "/heartbeat",
                                          protocol::HeartbeatBody(node, tasks, device_usage)));
  return protocol::ParseHeartbeatReply(body);
}

}  // namespace xpool::agent
