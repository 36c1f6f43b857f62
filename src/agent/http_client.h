#pragma once
// HttpControlPlaneClient: the agent's ControlPlaneClient over the server's REST API (JSON over
// HTTP through src/http's client), the fallback to the gRPC protocol. Register = POST /api/v1/nodes, Heartbeat =
// POST /api/v1/nodes/{name}/heartbeat; both carry "Authorization: Bearer <token>". The JSON shapes
// are in docs/agent.md ("Agent ↔ server").
//
// Errors: server unreachable → Unavailable naming the URL; 401 → Unauthenticated ("bad node
// token"); other non-2xx → the server's error message with its code. One client per agent; not
// thread-safe.
#include <string>
#include <string_view>

#include "agent/node_agent.h"
#include "protocol/json_codec.h"

namespace xpool::agent {

struct HttpClientOptions {
  std::string server_url = "http://127.0.0.1:8470";  // http://host:port
  std::string token;
  TimeMicros timeout_micros = 5 * kMicrosPerSecond;
};

class HttpControlPlaneClient final : public ControlPlaneClient {
 public:
  explicit HttpControlPlaneClient(HttpClientOptions options);
  Status Register(const Node& node) override;
  using ControlPlaneClient::Heartbeat;
  Result<HeartbeatReply> Heartbeat(const Node& node, const std::vector<TaskReport>& tasks,
                                   const std::vector<protocol::DeviceUsageSample>& device_usage) override;

 private:
  Result<std::string> Post(const std::string& path, const std::string& body);
  HttpClientOptions options_;
};

// The JSON codec (RegisterBody, HeartbeatBody, ParseHeartbeatReply) is in agent/protocol.h.

}  // namespace xpool::agent
