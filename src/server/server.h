#pragma once
// Server: `xpool server` — opens the state store, makes sure an admin token exists, rebuilds the control plane
// and serves the REST API over HTTP (and the agent protocol over gRPC, AgentGrpcServer) until Shutdown().
//
// First start: creates the admin tenant and token, writes the token to STATE_DIR/admin.token (mode 0600) and
// says where it is (never the token itself). If that file is lost later, the next start writes a new one.
// Owned by the CLI's `server` command. Thread-safe: Shutdown() may be called from any thread.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace xpool {
class StateStore;
}  // namespace xpool
namespace xpool::protocol {
class LogRelay;
}  // namespace xpool::protocol

namespace xpool::server {

class AgentService;
class ControlPlane;

struct ServerOptions {
  std::string listen = "127.0.0.1:8470";  // host:port; port 0 = any free port
  // Agents over gRPC (docs/agent.md): host:port, or "off". "" = the API's host with port 8471 when the API is on
  // 8470, else any free port (printed).
  std::string agent_listen;
  // The nice value (0..19) the agents' calls run at, below the API's workers and the scheduling loop
  // (AgentGrpcServer; 0 = the same as the API).
  int64_t agent_nice = 10;
  std::string state_dir;           // required: admin.token lives here (and xpool.db for SQLite)
  std::string store;               // "" = SQLite at STATE_DIR/xpool.db; or postgres://...
  std::string policy = "default";  // the fragmentation-aware policy (docs/scheduling.md)
  size_t max_body_bytes = 1 << 20;
  // The HTTP transport (docs/api.md, "Connections and limits"). "epoll" (http::HttpServer): one event loop
  // reads and parses every connection with the deadlines and caps below and hands complete requests to
  // `threads` workers. "threads" (cpp-httplib): a worker per open keep-alive connection, its 10 s read timeout
  // and none of the deadlines or caps; kept to measure against (xpool_server_load --transports).
  std::string http_transport = "epoll";
  int threads = 128;                // HTTP workers running requests (idle ones cost only their stacks' address space)
  int64_t max_connections = 10000;  // open at once (fewer when RLIMIT_NOFILE's hard limit is lower)
  int64_t max_connections_per_client = 1024;
  int64_t header_timeout_ms = 10'000;  // a request head, from the connection's first byte of it
  int64_t body_timeout_ms = 30'000;    // a request body, from the end of its head
  int64_t idle_timeout_ms = 30'000;    // a keep-alive connection between requests
  int64_t write_timeout_ms = 10'000;   // an answer the client does not read
  size_t max_header_bytes = 32 << 10;  // request line and headers
  int64_t tick_ms = 1000;
  int64_t node_timeout_s = 30;           // a non-simulated node silent this long is lost; its jobs requeue
  int64_t min_runtime_s = 600;           // time-sharing: a job that started less than this ago is not a victim
  int64_t max_suspensions_per_hour = 3;  // time-sharing: per job
  std::string web_dir;                   // Studio's built UI; "" = Studio::DefaultWebDir()
  // Agents' task directories on this machine (`xpool up`: STATE_DIR/tasks; `xpool server --task-log-dir`): job
  // logs are read from the files there when the server's copy (LogRelay) does not hold them.
  std::vector<std::string> task_log_dirs;
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> Create(const ServerOptions& options);
  ~Server();

  // Binds and serves; returns after Shutdown() (or when binding fails). on_listening, when given, is called
  // once with the bound port (the real one for --listen HOST:0) before the first request is served.
  Status Run(const std::function<void(int port)>& on_listening = {});
  void Shutdown();
  // For in-process users (`xpool up` wires its agent to these); valid while the Server lives.
  ControlPlane& control_plane();
  StateStore& store();
  // Task output shipped by agents (an in-process agent feeds it too, so `xpool logs` works under `xpool up`).
  protocol::LogRelay& log_relay();
  // The agents' side of the control plane (`xpool up` wires its in-process agent to it).
  AgentService& agent_service();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  static Status StartAgentListener(Impl& impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpool::server
