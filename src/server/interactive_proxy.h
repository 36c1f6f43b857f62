#pragma once
// InteractiveProxy: /api/v1/jobs/{id}/proxy/... — the authenticated way into an interactive job's task
// (kind: interactive, docs/jobs.md). Any method; the request goes, path and query unchanged, to replica 0's node
// (its registered address, kNodeAddressLabel, else its name) on the spec's port, and the answer comes back.
//
// - Auth: the tenant's bearer token (GET /api/v1/jobs/{id}'s rules: 401 without a valid token, 404 for another
//   tenant's job exactly as for a missing one), or — for a browser tab — a session cookie: the one-time link of
//   POST /api/v1/jobs/{id}/proxy-session (?xpool-session=CODE) is answered with a redirect that drops the code
//   and sets "xpool-proxy-<id>", HttpOnly, SameSite=Lax, Path=/api/v1/jobs/<id>/proxy/ (ProxySessions).
//   The job must be interactive and running (else 409). The task sees the browser's Host, X-Forwarded-For,
//   X-Forwarded-Proto and X-Forwarded-Prefix; not the xpool bearer token nor the session cookie.
// - Plain requests are forwarded on the HTTP worker that took them (http::SendHttpRequest, whole bodies both
//   ways): at most max_requests at once (503 past it), so a slow task can hold no more workers than that.
//   A task that does not answer: 502.
// - WebSockets ("Upgrade: websocket"): the upgrade request goes to the task; its 101 goes back and the client's
//   connection is handed over (HttpResponse::take_over) to a tunnel (http::TunnelPool: its own thread, bounded
//   buffers, an idle timeout, at most tunnels.max_tunnels; 503 past it). Needs the epoll transport.
// - Every request, and tunnel traffic at most once a second, restarts the job's idle clock
//   (ControlPlane::NoteInteractiveTraffic).
//
// Owned by the Server, after the Api, store and control plane it uses (their lifetime covers its own).
// Thread-safe: Serve runs on many HTTP workers at once.
#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "common/ids.h"
#include "common/status.h"
#include "http/http_message.h"
#include "http/tunnel.h"

namespace xpool {
class StateStore;
struct JobRecord;
}  // namespace xpool

namespace xpool::server {

class Api;
class ControlPlane;
class ProxySessions;

// The query parameter that carries a one-time proxy code.
inline constexpr std::string_view kProxySessionParam = "xpool-session";

// "/api/v1/jobs/<id>/proxy/": where an interactive job is proxied (its task's XPOOL_PROXY_BASE).
std::string InteractiveProxyBase(JobId id);

struct InteractiveProxyOptions {
  int max_requests = 64;  // plain requests being forwarded at once
  int64_t connect_timeout_ms = 3000;
  int64_t io_timeout_ms = 120'000;  // the task's answer: the longest wait for its next bytes
  int64_t max_response_bytes = 256ll << 20;
  bool websockets = true;  // false: the transport cannot hand connections over (--http-transport threads): 501
  http::TunnelOptions tunnels;
};

class InteractiveProxy {
 public:
  InteractiveProxy(Api& api, StateStore& store, ControlPlane& control, ProxySessions& sessions,
                   InteractiveProxyOptions options = {});
  ~InteractiveProxy();
  InteractiveProxy(const InteractiveProxy&) = delete;
  InteractiveProxy& operator=(const InteractiveProxy&) = delete;

  // True for "/api/v1/jobs/<digits>/proxy" and everything below it.
  static bool Handles(std::string_view path);
  http::HttpResponse Serve(http::HttpRequest& request);
  int tunnels_open() const { return tunnels_.open(); }

 private:
  struct Authorized;
  Result<Authorized> Authorize(const http::HttpRequest& request, const std::string& id_text, JobId id);
  http::HttpResponse Redeem(const http::HttpRequest& request, JobId id, const std::string& code);
  // "http://address:port" of the job's replica 0.
  Result<std::string> Upstream(const JobRecord& job);
  http::HttpRequest Outgoing(const http::HttpRequest& request, JobId id, bool strip_authorization) const;
  http::HttpResponse Forward(const http::HttpRequest& request, const std::string& upstream, JobId id, bool bearer);
  http::HttpResponse Upgrade(const http::HttpRequest& request, const std::string& upstream, JobId id, bool bearer);

  Api& api_;
  StateStore& store_;
  ControlPlane& control_;
  ProxySessions& sessions_;
  const InteractiveProxyOptions options_;
  std::atomic<int> in_flight_{0};
  http::TunnelPool tunnels_;
};

}  // namespace xpool::server
