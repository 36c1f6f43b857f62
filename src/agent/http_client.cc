#include "agent/http_client.h"

#include <httplib.h>

#include <utility>

#include "common/http_error.h"
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
  httplib::Client client(options_.server_url);
  if (!client.is_valid()) return InvalidArgumentError("bad server URL \"" + options_.server_url + "\"");
  const auto seconds = options_.timeout_micros / kMicrosPerSecond;
  const auto micros = options_.timeout_micros % kMicrosPerSecond;
  client.set_connection_timeout(seconds, micros);
  client.set_read_timeout(seconds, micros);
  client.set_write_timeout(seconds, micros);
  httplib::Headers headers;
  if (!options_.token.empty()) headers.emplace("Authorization", "Bearer " + options_.token);
  auto res = client.Post(path.c_str(), headers, body, "application/json");
  if (!res) {
    return UnavailableError("cannot reach the server at " + options_.server_url + " (" +
                            httplib::to_string(res.error()) + ")");
  }
  if (res->status < 200 || res->status >= 300) return ErrorFromResponse(res->status, res->body, "POST " + path);
  return res->body;
}

Status HttpControlPlaneClient::Register(const Node& node) {
  // ?agent=1: the node is run by this agent (its jobs wait for the agent's reports).
  return Post("/api/v1/nodes?agent=1", protocol::RegisterBody(node)).status();
}

Result<HeartbeatReply> HttpControlPlaneClient::Heartbeat(const Node& node, const std::vector<TaskReport>& tasks) {
  ASSIGN_OR_RETURN(std::string body,
                   Post("/api/v1/nodes/" + node.name + "/heartbeat", protocol::HeartbeatBody(node, tasks)));
  return protocol::ParseHeartbeatReply(body);
}

}  // namespace xpool::agent
