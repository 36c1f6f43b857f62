#pragma once
// AgentGrpcServer: the server's gRPC listener for node agents (proto/agent/v1/agent.proto; `xpool server
// --agent-listen`). It only translates: the token in the call's metadata ("authorization: Bearer ..."), the
// messages (protocol/grpc_codec.h) and the Status codes; the checks and the logic are the Api's
// (Api::RegisterAgentNode / AgentHeartbeat, the same code as the HTTP agent routes, which ends in AgentService).
//
// Owned by the Server; the Api outlives it. gRPC headers stay in the .cc. Thread-safe: every call is gRPC's
// callback kind (no thread per call or per connection); Register and Heartbeat run on a fixed pool of
// max(4, cores) threads, WaitForChange holds no thread while it waits. Shutdown() may be called from any thread
// (and more than once).
//
// Priority: those threads and gRPC's own (which read, parse and answer the calls) run at the nice value given to
// Start (`xpool server --agent-nice`, 10 by default; common/thread_priority.h), below the API's workers and the
// scheduling loop. An agent's heartbeat may wait a few hundred ms on a busy server (the node timeout is 30 s);
// a person's request should not wait behind 1,500 of them.
#include <memory>
#include <string>

#include "common/status.h"

namespace xpool::server {

class Api;

class AgentGrpcServer {
 public:
  // Binds `listen` (HOST:PORT; port 0 = any free port) and serves until Shutdown() or destruction; the calls run
  // at nice value `nice` (0..19; 0 = the caller's).
  static Result<std::unique_ptr<AgentGrpcServer>> Start(const std::string& listen, Api& api, int nice = 0);
  ~AgentGrpcServer();

  int port() const;  // the bound port
  void Shutdown();

 private:
  struct Impl;
  explicit AgentGrpcServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpool::server
