#include "server/interactive_proxy.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "common/text.h"
#include "http/http_client.h"
#include "protocol/task.h"
#include "server/api.h"
#include "server/control_plane.h"
#include "server/http_status.h"
#include "server/proxy_sessions.h"
#include "store/state_store.h"

namespace xpool::server {
namespace {

constexpr std::string_view kJobsPrefix = "/api/v1/jobs/";
constexpr std::string_view kCookiePrefix = "xpool-proxy-";

http::HttpResponse ErrorAnswer(const Status& s, int status = 0) {
  http::HttpResponse r;
  r.status = status != 0 ? status : HttpStatusFor(s);
  r.content_type = "application/json";
  r.body = ErrorBody(s);
  if (r.status == 503) r.headers.emplace_back("Retry-After", "1");
  return r;
}

// The digits after /api/v1/jobs/ when `path` is that job's proxy (or below it); "" otherwise.
std::string_view ProxiedJob(std::string_view path) {
  if (!path.starts_with(kJobsPrefix)) return {};
  std::string_view rest = path.substr(kJobsPrefix.size());
  size_t digits = 0;
  while (digits < rest.size() && digits < 18 && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  if (digits == 0) return {};
  std::string_view tail = rest.substr(digits);
  if (tail != "/proxy" && !tail.starts_with("/proxy/")) return {};
  return rest.substr(0, digits);
}

// Headers that describe one hop, never forwarded either way (RFC 9110 section 7.6.1), and the ones the client
// library or the transport writes itself.
bool HopByHop(std::string_view name) {
  for (std::string_view h : {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer",
                             "transfer-encoding", "upgrade", "content-length", "expect"}) {
    if (EqualsIgnoreCase(name, h)) return true;
  }
  return false;
}

// The Cookie header without the proxy's own cookies; "" when nothing else is left.
std::string ForeignCookies(std::string_view header) {
  std::string out;
  size_t pos = 0;
  while (pos <= header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string_view::npos) end = header.size();
    std::string_view pair = header.substr(pos, end - pos);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    if (!pair.empty() && !pair.starts_with(kCookiePrefix)) out.append(out.empty() ? "" : "; ").append(pair);
    pos = end + 1;
  }
  return out;
}

// The value of cookie `name` in a Cookie header; "" when absent.
std::string CookieValue(std::string_view header, std::string_view name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string_view::npos) end = header.size();
    std::string_view pair = header.substr(pos, end - pos);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    if (pair.size() > name.size() && pair.starts_with(name) && pair[name.size()] == '=') {
      return std::string(pair.substr(name.size() + 1));
    }
    pos = end + 1;
  }
  return "";
}

// A socket closed with its owner, unless released (an upstream WebSocket connection until its tunnel takes it).
struct OwnedFd {
  explicit OwnedFd(int f) : fd(f) {}
  ~OwnedFd() {
    if (fd >= 0) ::close(fd);
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  int Release() { return std::exchange(fd, -1); }
  int fd;
};

}  // namespace

std::string InteractiveProxyBase(JobId id) { return std::string(kJobsPrefix) + id.ToString() + "/proxy/"; }

struct InteractiveProxy::Authorized {
  JobRecord job;
  bool bearer = false;  // by the Authorization header (kept from the task)
};

InteractiveProxy::InteractiveProxy(Api& api, StateStore& store, ControlPlane& control, ProxySessions& sessions,
                                   InteractiveProxyOptions options)
    : api_(api), store_(store), control_(control), sessions_(sessions), options_(options), tunnels_(options.tunnels) {}

InteractiveProxy::~InteractiveProxy() { tunnels_.Stop(); }

bool InteractiveProxy::Handles(std::string_view path) { return !ProxiedJob(path).empty(); }

http::HttpResponse InteractiveProxy::Serve(http::HttpRequest& request) {
  const std::string id_text(ProxiedJob(request.path));
  if (id_text.empty()) return ErrorAnswer(NotFoundError("no such route"));
  const JobId id(std::stoll(id_text));
  const std::string base = InteractiveProxyBase(id);
  if (request.path.size() + 1 == base.size()) {  // ".../proxy": the task's pages expect the trailing '/'
    http::HttpResponse r;
    r.status = 308;
    r.headers.emplace_back("Location", base + (request.query.empty() ? "" : "?" + request.query));
    return r;
  }
  for (const auto& [k, v] : http::ParseQuery(request.query)) {
    if (k == kProxySessionParam) return Redeem(request, id, v);
  }
  Result<Authorized> auth = Authorize(request, id_text, id);
  if (!auth.ok()) return ErrorAnswer(auth.status());
  const JobRecord& job = auth->job;
  if (!job.spec.interactive) return ErrorAnswer(FailedPreconditionError("job " + id_text + " is not interactive"));
  if (job.state != JobState::kRunning) {
    return ErrorAnswer(FailedPreconditionError("job " + id_text + " is " + std::string(JobStateName(job.state)) +
                                               ": its proxy opens while it runs"));
  }
  Result<std::string> upstream = Upstream(job);
  if (!upstream.ok()) return ErrorAnswer(upstream.status());
  control_.NoteInteractiveTraffic(id);
  if (EqualsIgnoreCase(request.Header("upgrade"), "websocket")) {
    return Upgrade(request, *upstream, id, auth->bearer);
  }
  return Forward(request, *upstream, id, auth->bearer);
}

Result<InteractiveProxy::Authorized> InteractiveProxy::Authorize(const http::HttpRequest& request,
                                                                 const std::string& id_text, JobId id) {
  const std::string cookie = CookieValue(request.Header("cookie"), std::string(kCookiePrefix) + id_text);
  Status session = UnauthenticatedError(
      "missing credentials: a bearer token (Authorization: Bearer <token>) or a proxy session "
      "(POST /api/v1/jobs/" +
      id_text + "/proxy-session)");
  if (!cookie.empty()) {
    session = sessions_.Check(cookie, id);
    if (session.ok()) {
      Result<JobRecord> job = store_.GetJob(id);
      if (!job.ok() && job.status().code() == StatusCode::kNotFound) {
        return NotFoundError("job " + id_text + " not found");
      }
      RETURN_IF_ERROR(job.status());
      return Authorized{std::move(*job), false};
    }
  }
  const std::string authorization(request.Header("authorization"));
  if (authorization.empty()) return session;
  ASSIGN_OR_RETURN(JobRecord job, api_.VisibleJobFor(authorization, id_text));
  return Authorized{std::move(job), true};
}

http::HttpResponse InteractiveProxy::Redeem(const http::HttpRequest& request, JobId id, const std::string& code) {
  Result<std::string> session = sessions_.Redeem(code, id);
  if (!session.ok()) return ErrorAnswer(session.status());
  // Back to the same address without the code (it is spent; it should not stay in the history either).
  std::string query;
  const std::string spent = std::string(kProxySessionParam) + "=";
  size_t pos = 0;
  while (pos <= request.query.size()) {
    size_t end = request.query.find('&', pos);
    if (end == std::string::npos) end = request.query.size();
    std::string_view part = std::string_view(request.query).substr(pos, end - pos);
    if (!part.empty() && !part.starts_with(spent) && part != kProxySessionParam) {
      query.append(query.empty() ? "" : "&").append(part);
    }
    pos = end + 1;
  }
  const std::string target = request.target.substr(0, request.target.find('?'));
  http::HttpResponse r;
  r.status = 303;
  r.headers.emplace_back("Location", target + (query.empty() ? "" : "?" + query));
  r.headers.emplace_back("Cache-Control", "no-store");
  r.headers.emplace_back("Set-Cookie", std::string(kCookiePrefix) + id.ToString() + "=" + *session +
                                           "; Path=" + InteractiveProxyBase(id) +
                                           "; Max-Age=" + std::to_string(sessions_.session_ttl() / kMicrosPerSecond) +
                                           "; HttpOnly; SameSite=Lax");
  return r;
}

Result<std::string> InteractiveProxy::Upstream(const JobRecord& job) {
  ASSIGN_OR_RETURN(std::vector<AllocationRecord> allocations, store_.JobAllocations(job.id));
  std::string node;
  for (const AllocationRecord& a : allocations) {
    if (a.replica == 0) node = a.node;
  }
  if (node.empty()) return FailedPreconditionError("job " + job.id.ToString() + " holds no node");
  std::string address = node;  // a node registered without an address: its name
  if (Result<NodeView> view = control_.GetNode(node); view.ok()) {
    auto label = view->node.labels.find(protocol::kNodeAddressLabel);
    if (label != view->node.labels.end() && !label->second.empty()) address = label->second;
  }
  if (address.find(':') != std::string::npos) address = "[" + address + "]";  // IPv6
  return "http://" + address + ":" + std::to_string(job.spec.interactive->port);
}

http::HttpRequest InteractiveProxy::Outgoing(const http::HttpRequest& request, JobId id,
                                             bool strip_authorization) const {
  http::HttpRequest out;
  out.method = request.method;  // a HEAD arrives as GET (head = true): the transport drops the body
  out.target = request.target;
  for (const auto& [name, value] : request.headers) {
    if (HopByHop(name) || (strip_authorization && name == "authorization")) continue;
    if (name == "cookie") {
      std::string rest = ForeignCookies(value);
      if (!rest.empty()) out.headers.emplace_back("Cookie", std::move(rest));
      continue;
    }
    if (name.starts_with("x-forwarded-")) continue;
    out.headers.emplace_back(name, value);
  }
  out.headers.emplace_back("X-Forwarded-For", request.peer);
  out.headers.emplace_back("X-Forwarded-Proto", "http");
  out.headers.emplace_back("X-Forwarded-Prefix", InteractiveProxyBase(id));
  out.body = request.body;
  return out;
}

http::HttpResponse InteractiveProxy::Forward(const http::HttpRequest& request, const std::string& upstream, JobId id,
                                             bool bearer) {
  if (in_flight_.fetch_add(1) >= options_.max_requests) {
    in_flight_.fetch_sub(1);
    return ErrorAnswer(UnavailableError("too many requests through the interactive proxy; retry later"));
  }
  http::ClientOptions client;
  client.connect_timeout_ms = options_.connect_timeout_ms;
  client.io_timeout_ms = options_.io_timeout_ms;
  client.max_response_bytes = options_.max_response_bytes;
  Result<http::HttpResponse> answer = http::SendHttpRequest(upstream, Outgoing(request, id, bearer), client);
  in_flight_.fetch_sub(1);
  if (!answer.ok()) {
    return ErrorAnswer(UnavailableError("job " + id.ToString() + "'s task does not answer at " + upstream + ": " +
                                        answer.status().message()),
                       502);
  }
  http::HttpResponse out;
  out.status = answer->status;
  out.content_type = answer->content_type.empty() ? "application/octet-stream" : answer->content_type;
  for (auto& [name, value] : answer->headers) {
    if (!HopByHop(name) && name != "content-type") out.headers.emplace_back(std::move(name), std::move(value));
  }
  out.body = std::move(answer->body);
  return out;
}

http::HttpResponse InteractiveProxy::Upgrade(const http::HttpRequest& request, const std::string& upstream, JobId id,
                                             bool bearer) {
  if (!options_.websockets) {
    return ErrorAnswer(FailedPreconditionError("WebSockets through the proxy need the server's epoll HTTP transport"),
                       501);
  }
  if (tunnels_.full()) return ErrorAnswer(UnavailableError("too many WebSockets through the proxy; retry later"));
  http::HttpRequest out = Outgoing(request, id, bearer);
  out.headers.emplace_back("Connection", "Upgrade");
  out.headers.emplace_back("Upgrade", std::string(request.Header("upgrade")));
  http::ClientOptions client;
  client.connect_timeout_ms = options_.connect_timeout_ms;
  client.io_timeout_ms = std::min<int64_t>(options_.io_timeout_ms, 30'000);
  client.max_response_bytes = 1 << 20;
  Result<http::UpgradeResult> answer = http::SendUpgradeRequest(upstream, out, client);
  if (!answer.ok()) {
    return ErrorAnswer(UnavailableError("job " + id.ToString() + "'s task does not answer at " + upstream + ": " +
                                        answer.status().message()),
                       502);
  }
  http::HttpResponse r;
  r.status = answer->response.status;
  r.content_type = answer->response.content_type;
  if (answer->fd < 0) {  // refused by the task: its answer as it is
    for (auto& [name, value] : answer->response.headers) {
      if (!HopByHop(name) && name != "content-type") r.headers.emplace_back(std::move(name), std::move(value));
    }
    r.body = std::move(answer->response.body);
    return r;
  }
  r.headers = std::move(answer->response.headers);  // 101: Upgrade, Connection, Sec-WebSocket-Accept, ...
  auto upstream_fd = std::make_shared<OwnedFd>(answer->fd);
  auto pending = std::make_shared<std::string>(std::move(answer->unread));
  http::TunnelPool* tunnels = &tunnels_;
  ControlPlane* control = &control_;
  r.take_over = [tunnels, control, id, upstream_fd, pending](int fd, std::string unread) {
    Status added = tunnels->Add(fd, std::move(unread), upstream_fd->Release(), std::move(*pending),
                                [control, id] { control->NoteInteractiveTraffic(id); });
    if (!added.ok())
      std::fprintf(stderr, "xpool server: WebSocket to job %lld: %s\n", static_cast<long long>(id.value()),
                   added.ToString().c_str());
  };
  return r;
}

}  // namespace xpool::server
