// Serves Studio and Api::Handle over HTTP: http::HttpServer (the "epoll" transport), or cpp-httplib ("threads",
// the only file of the server that includes it).
#include "server/server.h"

#include <fcntl.h>
#include <httplib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include "common/clock.h"
#include "common/text.h"
#include "http/http_server.h"
#include "protocol/log_relay.h"
#include "server/agent_grpc_service.h"
#include "server/agent_service.h"
#include "server/api.h"
#include "server/compressed_device_series.h"
#include "server/control_plane.h"
#include "server/http_status.h"
#include "server/interactive_proxy.h"
#include "server/metrics.h"
#include "server/proxy_sessions.h"
#include "server/studio.h"
#include "server/usage_history.h"
#include "server/usage_recorder.h"
#include "store/caching_state_store.h"
#include "store/state_store.h"
#include "store/token.h"

namespace xpool::server {
namespace {

// Writes `content` to `path` with mode 0600, atomically (temp file + rename).
Status WriteSecretFile(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return UnavailableError("cannot create " + tmp + ": " + std::strerror(errno));
  bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, content.data(), content.size()) == ssize_t(content.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return UnavailableError("cannot write " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

// Creates the admin tenant and token on first start; replaces a lost admin.token file.
Status EnsureAdmin(StateStore& store, Clock& clock, const std::string& state_dir) {
  const std::string path = state_dir + "/admin.token";
  ASSIGN_OR_RETURN(std::vector<TenantRecord> tenants, store.ListTenants());
  const TenantRecord* admin = nullptr;
  for (const TenantRecord& t : tenants) {
    if (t.admin) admin = &t;
  }
  TenantRecord created;
  if (admin == nullptr) {
    ASSIGN_OR_RETURN(created, store.CreateTenant("admin", /*admin=*/true, TenantQuota{}, clock.NowMicros()));
    admin = &created;
  } else if (std::filesystem::exists(path)) {
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(std::string token, GenerateToken());
  RETURN_IF_ERROR(store.AddToken(admin->id, token, "admin (written to admin.token)", clock.NowMicros()).status());
  RETURN_IF_ERROR(WriteSecretFile(path, token + "\n"));
  std::fprintf(stderr,
               "xpool server: admin token written to %s (mode 0600)\n"
               "  use it with: export XPOOL_TOKEN=$(cat %s)\n",
               path.c_str(), path.c_str());
  return Status::Ok();
}

Result<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size()) {
    return InvalidArgumentError("--listen must be HOST:PORT, got \"" + listen + "\"");
  }
  std::string host = listen.substr(0, colon);
  int port = 0;
  for (char c : listen.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) return InvalidArgumentError("--listen: bad port in \"" + listen + "\"");
    port = port * 10 + (c - '0');
  }
  if (port > 65535) return InvalidArgumentError("--listen: port must be 0..65535");
  if (host.empty()) host = "0.0.0.0";
  return std::make_pair(host, port);
}

// The HTTP transport's flags (docs/api.md, "Connections and limits").
Status CheckHttpOptions(const ServerOptions& o) {
  if (o.http_transport != "epoll" && o.http_transport != "threads") {
    return InvalidArgumentError("--http-transport must be epoll or threads, got \"" + o.http_transport + "\"");
  }
  if (o.max_connections < 1 || o.max_connections_per_client < 1 || o.max_connections > 1'000'000 ||
      o.max_connections_per_client > 1'000'000) {
    return InvalidArgumentError("--max-connections and --max-connections-per-client must be 1..1000000");
  }
  for (int64_t ms : {o.header_timeout_ms, o.body_timeout_ms, o.idle_timeout_ms, o.write_timeout_ms}) {
    if (ms < 10 || ms > 3'600'000) {
      return InvalidArgumentError(
          "--header-timeout-ms, --body-timeout-ms, --idle-timeout-ms and --write-timeout-ms must be 10..3600000");
    }
  }
  if (o.max_header_bytes < 1024) return InvalidArgumentError("the header limit must be >= 1024 bytes");
  return Status::Ok();
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  std::unique_ptr<StateStore> store;
  // Every job and live allocation in memory, written through to `store`: what the server reads jobs from.
  std::unique_ptr<CachingStateStore> jobs;
  MetricsRegistry metrics;
  std::unique_ptr<ControlPlane> control;
  std::unique_ptr<ProxySessions> proxy_sessions;  // interactive jobs' browser sessions
  // GET /metrics's device series for gzip scrapes: after control (its thread renders from it), before api.
  std::unique_ptr<CompressedDeviceSeries> device_series;
  std::unique_ptr<Api> api;
  // Interactive jobs (/api/v1/jobs/{id}/proxy/): after api and control, so it (and its tunnels) go first.
  std::unique_ptr<InteractiveProxy> proxy;
  std::unique_ptr<AgentService> agents;      // agents over HTTP (heartbeat route)
  std::unique_ptr<protocol::LogRelay> logs;  // task output shipped in heartbeats (GET /jobs/{id}/logs)
  std::unique_ptr<Studio> studio;
  UsageHistory usage_history;                   // sampled every 10 s for Studio's Overview chart
  std::unique_ptr<UsageRecorder> usage;         // the durable usage history (GET /api/v1/usage)
  std::unique_ptr<http::HttpServer> http;       // --http-transport epoll
  httplib::Server threaded_http;                // --http-transport threads
  std::mutex http_mu;                           // guards `http` between Run and Shutdown
  bool shut_down = false;                       // Shutdown() came (perhaps before Run made `http`)
  std::unique_ptr<AgentGrpcServer> agent_grpc;  // agents over gRPC; null with --agent-listen off

  Status RunEvent(const std::string& host, int port, const std::function<void(int)>& on_listening);
  Status RunThreaded(const std::string& host, int port, const std::function<void(int)>& on_listening);
  void Announce(const std::string& host, int port) const;
  http::HttpResponse Respond(http::HttpRequest& request);
  void ExportHttpStats();
  std::mutex exported_mu;
  std::map<std::string, int64_t> exported;  // the transport's counters as last added to `metrics`
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  if (impl_) impl_->usage_history.Stop();
  if (impl_ && impl_->usage) impl_->usage->Stop();
  if (impl_ && impl_->control) impl_->control->Stop();
}

// The gRPC listener for agents (--agent-listen; the default follows --listen, see ServerOptions).
Status Server::StartAgentListener(Impl& impl) {
  std::string listen = impl.options.agent_listen;
  if (listen == "off") return Status::Ok();
  if (listen.empty()) {
    ASSIGN_OR_RETURN(auto api, ParseListen(impl.options.listen));
    listen = api.first + ":" + (api.second == 8470 ? "8471" : "0");
  }
  auto host_port = ParseListen(listen);
  if (!host_port.ok()) return InvalidArgumentError("--agent-listen must be HOST:PORT or off, got \"" + listen + "\"");
  ASSIGN_OR_RETURN(impl.agent_grpc, AgentGrpcServer::Start(host_port->first + ":" + std::to_string(host_port->second),
                                                           *impl.api, static_cast<int>(impl.options.agent_nice)));
  std::fprintf(stderr, "xpool server: agents (gRPC) on grpc://%s:%d\n", host_port->first.c_str(),
               impl.agent_grpc->port());
  return Status::Ok();
}

Result<std::unique_ptr<Server>> Server::Create(const ServerOptions& options) {
  if (options.state_dir.empty()) return InvalidArgumentError("--state-dir is required");
  RETURN_IF_ERROR(ParseListen(options.listen).status());
  RETURN_IF_ERROR(CheckHttpOptions(options));
  if (options.agent_nice < 0 || options.agent_nice > 19) {
    return InvalidArgumentError("--agent-nice must be 0..19, got " + std::to_string(options.agent_nice));
  }
  std::error_code ec;
  std::filesystem::create_directories(options.state_dir, ec);
  if (ec) return InvalidArgumentError("cannot create --state-dir " + options.state_dir + ": " + ec.message());
  ::chmod(options.state_dir.c_str(), 0700);
  auto impl = std::make_unique<Impl>();
  protocol::LogRelayOptions log_options;
  log_options.disk_dirs = options.task_log_dirs;
  impl->logs = std::make_unique<protocol::LogRelay>(log_options);
  impl->options = options;
  std::string location = options.store.empty() ? options.state_dir + "/xpool.db" : options.store;
  ASSIGN_OR_RETURN(impl->store, OpenStateStore(location));
  Clock& clock = RealClock::Instance();
  RETURN_IF_ERROR(EnsureAdmin(*impl->store, clock, options.state_dir));
  ASSIGN_OR_RETURN(impl->jobs, CachingStateStore::Load(*impl->store));

  MetricsRegistry& m = impl->metrics;
  ControlPlane::DeclareMetrics(m);
  Api::DeclareMetrics(m);
  m.DeclareGauge("xpool_http_connections", "HTTP connections open (--http-transport epoll).");
  m.DeclareCounter("xpool_http_refused_total",
                   "HTTP connections and requests the transport refused or dropped, by reason: connection_cap, "
                   "body_budget (503), bad_request (400/413/414/431/501/505), timeout (408 or dropped).");

  ControlPlaneOptions cp;
  cp.policy = options.policy;
  cp.tick = options.tick_ms * 1000;
  if (options.node_timeout_s < 1 || options.node_timeout_s > 86400 || options.min_runtime_s < 0 ||
      options.min_runtime_s > 7 * 86400 || options.max_suspensions_per_hour < 0 ||
      options.max_suspensions_per_hour > 1000) {
    return InvalidArgumentError(
        "--node-timeout must be 1..86400 s, --min-runtime 0..604800 s, "
        "--max-suspensions-per-hour 0..1000");
  }
  cp.node_timeout = options.node_timeout_s * kMicrosPerSecond;
  cp.min_runtime = options.min_runtime_s * kMicrosPerSecond;
  cp.max_suspensions_per_hour = static_cast<int>(options.max_suspensions_per_hour);
  impl->control = std::make_unique<ControlPlane>(*impl->jobs, clock, &m, cp);
  RETURN_IF_ERROR(impl->control->Start());
  ApiOptions api_options;
  api_options.max_body_bytes = options.max_body_bytes;
  AgentService::DeclareMetrics(m);
  impl->agents = std::make_unique<AgentService>(*impl->control, *impl->jobs, impl->logs.get(), &m);
  api_options.agents = impl->agents.get();
  impl->usage = std::make_unique<UsageRecorder>(*impl->jobs, clock);
  impl->agents->SetUsageRecorder(impl->usage.get());
  impl->usage->Start([control = impl->control.get()] { return control->Nodes(); },
                     [jobs = impl->jobs.get()] { return jobs->ListAllocations(); });
  api_options.logs = impl->logs.get();
  api_options.usage_history = &impl->usage_history;
  impl->studio = std::make_unique<Studio>(options.web_dir.empty() ? Studio::DefaultWebDir() : options.web_dir);
  impl->usage_history.Start([control = impl->control.get(), &clock] {
    return UsageHistory::Measure(control->Nodes(), static_cast<int64_t>(control->queue_length()), clock.NowMicros());
  });
  impl->proxy_sessions = std::make_unique<ProxySessions>(clock);
  api_options.proxy_sessions = impl->proxy_sessions.get();
  impl->device_series = std::make_unique<CompressedDeviceSeries>(
      [control = impl->control.get()](std::string* out) { control->AppendDeviceMetrics(out); },
      CompressedDeviceSeries::Options{});
  api_options.device_series = impl->device_series.get();
  impl->api = std::make_unique<Api>(*impl->jobs, *impl->control, m, clock, api_options);
  InteractiveProxyOptions proxy_options;
  proxy_options.websockets = options.http_transport == "epoll";
  impl->proxy =
      std::make_unique<InteractiveProxy>(*impl->api, *impl->jobs, *impl->control, *impl->proxy_sessions, proxy_options);
  RETURN_IF_ERROR(StartAgentListener(*impl));
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Status Server::Run(const std::function<void(int port)>& on_listening) {
  Impl& s = *impl_;
  ASSIGN_OR_RETURN(auto host_port, ParseListen(s.options.listen));
  if (s.options.http_transport == "threads") return s.RunThreaded(host_port.first, host_port.second, on_listening);
  return s.RunEvent(host_port.first, host_port.second, on_listening);
}

void Server::Impl::Announce(const std::string& host, int port) const {
  std::fprintf(stderr, "xpool server: listening on http://%s:%d (store: %s, state: %s)\n", host.c_str(), port,
               std::string(store->Kind()).c_str(), options.state_dir.c_str());
  if (studio->built()) {
    std::fprintf(stderr, "xpool server: Studio (web UI) at http://%s:%d/\n", host.c_str(), port);
  } else {
    std::fprintf(stderr, "xpool server: Studio is not built (no %s/index.html); the API works without it\n",
                 studio->web_dir().c_str());
  }
  std::fflush(stderr);
}

// The transport's counters into the metrics, before /metrics is rendered (counters get what grew since).
void Server::Impl::ExportHttpStats() {
  if (!http) return;
  const http::HttpServerStats& st = http->stats();
  metrics.GaugeSet("xpool_http_connections", {}, static_cast<double>(st.connections_open.load()));
  std::lock_guard<std::mutex> lock(exported_mu);
  const std::pair<const char*, int64_t> now[] = {{"connection_cap", st.connections_refused.load()},
                                                 {"body_budget", st.bodies_refused.load()},
                                                 {"bad_request", st.bad_requests.load()},
                                                 {"timeout", st.timeouts.load()}};
  for (const auto& [reason, value] : now) {
    int64_t& last = exported[reason];
    if (value > last) metrics.CounterAdd("xpool_http_refused_total", {{"reason", reason}}, double(value - last));
    last = std::max(last, value);
  }
}

// One complete request: Studio's files, else the API. Runs on an HTTP worker.
http::HttpResponse Server::Impl::Respond(http::HttpRequest& request) {
  http::HttpResponse res;
  if (request.path == "/metrics") ExportHttpStats();
  if (InteractiveProxy::Handles(request.path)) return proxy->Serve(request);
  if (Studio::Handles(request.method, request.path)) {
    StudioResponse r = studio->Serve(request.path);
    res.status = r.status;
    res.headers = std::move(r.headers);
    res.content_type = std::move(r.content_type);
    res.body = std::move(r.body);
    return res;
  }
  ApiRequest a;
  a.method = std::move(request.method);
  a.path = std::move(request.path);
  for (auto& [k, v] : http::ParseQuery(request.query)) a.query.emplace(std::move(k), std::move(v));
  a.authorization = std::string(request.Header("authorization"));
  a.content_type = std::string(request.Header("content-type"));
  a.accept_encoding = std::string(request.Header("accept-encoding"));
  a.body = std::move(request.body);
  ApiResponse r = api->Handle(a);
  res.status = r.status;
  res.content_type = std::move(r.content_type);
  res.headers = std::move(r.headers);
  res.body = std::move(r.body);
  return res;
}

namespace {

// The JSON error for what the transport refuses itself (docs/api.md, "Connections and limits").
http::HttpResponse TransportError(int status, const std::string& message) {
  StatusCode code = StatusCode::kInvalidArgument;
  if (status == 413 || status == 414 || status == 431) code = StatusCode::kResourceExhausted;
  if (status == 503) code = StatusCode::kUnavailable;
  if (status == 500) code = StatusCode::kInternal;
  http::HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = ErrorBody(Status(code, message));
  return r;
}

}  // namespace

Status Server::Impl::RunEvent(const std::string& host, int port, const std::function<void(int)>& on_listening) {
  http::HttpServerOptions o;
  o.limits.max_header_bytes = options.max_header_bytes;
  o.limits.max_body_bytes = options.max_body_bytes;
  o.worker_threads = options.threads;
  o.max_connections = static_cast<int>(options.max_connections);
  o.max_connections_per_client = static_cast<int>(options.max_connections_per_client);
  o.header_timeout_ms = options.header_timeout_ms;
  o.body_timeout_ms = options.body_timeout_ms;
  o.idle_timeout_ms = options.idle_timeout_ms;
  o.write_timeout_ms = options.write_timeout_ms;
  {
    std::lock_guard<std::mutex> lock(http_mu);
    if (shut_down) return Status::Ok();
    http = std::make_unique<http::HttpServer>(
        o, [this](http::HttpRequest& r) { return Respond(r); }, TransportError);
  }
  Result<int> bound = http->Bind(host, port);
  if (!bound.ok()) {
    const bool in_use = bound.status().message() == "address already in use";
    return UnavailableError("cannot listen on " + options.listen + ": " + bound.status().message() +
                            (in_use ? " (another xpool server? choose another --listen)" : ""));
  }
  Announce(host, *bound);
  if (on_listening) on_listening(*bound);
  return http->Serve();
}

Status Server::Impl::RunThreaded(const std::string& host, int port, const std::function<void(int)>& on_listening) {
  const int workers = options.threads;
  httplib::Server& h = threaded_http;
  h.new_task_queue = [workers] { return new httplib::ThreadPool(static_cast<size_t>(workers)); };
  h.set_payload_max_length(options.max_body_bytes);
  // Without TCP_NODELAY a response written in two parts waits for the client's delayed ACK (~40 ms each).
  h.set_tcp_nodelay(true);
  // Debian's libcpp-httplib listens with a backlog of 5: a burst of new connections (agents reporting in) would
  // see dropped SYNs and 1 s retransmits. Remember the listening socket and widen its backlog after binding.
  // Only SO_REUSEADDR: Debian's httplib also sets SO_REUSEPORT by default, with which a second `xpool server` on
  // the same port started without error and took a share of the connections.
  int listen_fd = -1;
  h.set_socket_options([&listen_fd](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd = static_cast<int>(sock);
  });
  h.set_keep_alive_max_count(100000);
  h.set_read_timeout(10, 0);
  auto handler = [this](const httplib::Request& req, httplib::Response& res) {
    http::HttpRequest r;
    r.method = req.method;
    r.path = req.path;
    for (const auto& [k, v] : req.params) {
      r.query += (r.query.empty() ? "" : "&") + httplib::detail::encode_query_param(k) + "=" +
                 httplib::detail::encode_query_param(v);
    }
    // Not Accept-Encoding: Debian's httplib compresses answers itself when the client takes gzip.
    for (const auto& [k, v] : req.headers) {
      if (!EqualsIgnoreCase(k, "accept-encoding")) r.headers.emplace_back(k, v);
    }
    r.body = req.body;
    http::HttpResponse out = Respond(r);
    res.status = out.status;
    for (const auto& [k, v] : out.headers) res.set_header(k, v);
    res.set_content(std::move(out.body), out.content_type.c_str());
  };
  const char* any = R"(/.*)";
  h.Get(any, handler);
  h.Post(any, handler);
  h.Put(any, handler);
  h.Patch(any, handler);
  h.Delete(any, handler);
  // Errors httplib answers itself (an oversized body is 413 before any handler runs) get a JSON body too.
  h.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 413) {
      ApiResponse r = api->TooLarge();
      res.set_content(r.body, r.content_type.c_str());
    } else {
      res.set_content("{\"error\":{\"code\":\"INVALID_ARGUMENT\",\"message\":\"bad HTTP request\"}}",
                      "application/json");
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    res.status = 500;
    res.set_content("{\"error\":{\"code\":\"INTERNAL\",\"message\":\"unexpected error\"}}", "application/json");
  });
  errno = 0;
  if (port == 0) {
    port = h.bind_to_any_port(host);
  } else if (!h.bind_to_port(host, port)) {
    port = -1;
  }
  if (port < 0 && errno == EADDRINUSE) {
    return UnavailableError("cannot listen on " + options.listen +
                            ": address already in use (another xpool server? choose another --listen)");
  }
  if (port < 0) {
    return UnavailableError("cannot listen on " + options.listen +
                            (errno != 0 ? ": " + std::string(std::strerror(errno)) : ""));
  }
  if (listen_fd >= 0) ::listen(listen_fd, SOMAXCONN);
  Announce(host, port);
  if (on_listening) on_listening(port);
  if (!h.listen_after_bind()) return UnavailableError("the HTTP listener stopped unexpectedly");
  return Status::Ok();
}

ControlPlane& Server::control_plane() { return *impl_->control; }
StateStore& Server::store() { return *impl_->store; }
protocol::LogRelay& Server::log_relay() { return *impl_->logs; }
AgentService& Server::agent_service() { return *impl_->agents; }

void Server::Shutdown() {
  if (impl_->agent_grpc) impl_->agent_grpc->Shutdown();
  {
    std::lock_guard<std::mutex> lock(impl_->http_mu);
    impl_->shut_down = true;
    if (impl_->http) impl_->http->Stop();
  }
  impl_->threaded_http.stop();
  impl_->control->Stop();
}

}  // namespace xpool::server
