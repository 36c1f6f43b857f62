#pragma once
// GrpcControlPlaneClient: the agent's ControlPlaneClient over gRPC (proto/agent/v1/agent.proto, the default
// transport of `xpool agent`). One channel per client, reconnecting by itself (at most ~1 s between attempts, so
// a restarted server is found again quickly); every call carries "authorization: Bearer <token>" and a deadline.
//
// Errors: server unreachable (or the deadline passed) → Unavailable naming the address; UNAUTHENTICATED →
// Unauthenticated ("the server rejected the node token"); PERMISSION_DENIED → PermissionDenied; NOT_FOUND (the
// server does not know the node) → NotFound, on which the agent registers again; the server's message is kept.
// gRPC headers stay in grpc_client.cc. One client per agent; not thread-safe, except that WaitForChange may run
// on another thread at the same time as the other calls (gRPC stubs are thread-safe; the client has no other state).
//
// MakeControlPlaneClient picks the transport from the --server URL: grpc://HOST:PORT or a bare HOST:PORT → gRPC;
// http://HOST:PORT → the HTTP fallback (agent/http_client.h).
#include <memory>
#include <string>
#include <vector>

#include "agent/node_agent.h"

namespace xpool::agent {

struct GrpcClientOptions {
  std::string target = "127.0.0.1:8471";  // host:port
  std::string token;
  TimeMicros timeout_micros = 5 * kMicrosPerSecond;
};

class GrpcControlPlaneClient final : public ControlPlaneClient {
 public:
  explicit GrpcControlPlaneClient(GrpcClientOptions options);
  ~GrpcControlPlaneClient() override;
  Status Register(const Node& node) override;
  using ControlPlaneClient::Heartbeat;
  Result<HeartbeatReply> Heartbeat(const Node& node, const std::vector<TaskReport>& tasks,
                                   const std::vector<protocol::DeviceUsageSample>& device_usage) override;
  // The channel is READY (asking it to connect when idle).
  bool Connected() override;
  // The WaitForChange RPC with `timeout` as its deadline (then: `seen`, nothing changed); a server without the
  // RPC (UNIMPLEMENTED) → FailedPrecondition. Safe to call concurrently with the other calls.
  Result<int64_t> WaitForChange(const Node& node, int64_t seen, TimeMicros timeout) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The client for `server` ("grpc://host:port", "host:port" or "http://host:port"). InvalidArgument for any other
// scheme or a missing port.
Result<std::unique_ptr<ControlPlaneClient>> MakeControlPlaneClient(const std::string& server, const std::string& token,
                                                                   TimeMicros timeout_micros);

}  // namespace xpool::agent
