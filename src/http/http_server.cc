#include "http/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace xpool::http {
namespace {

constexpr int64_t kSweepMs = 100;               // how often deadlines are checked (their resolution)
constexpr int64_t kLingerMs = 1000;             // a closing connection drains unread input this long
constexpr size_t kReadChunk = 64 << 10;         // one recv
constexpr size_t kMaxReadPerEvent = 256 << 10;  // then the loop serves other connections
constexpr int kMaxEvents = 256;
constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string PeerAddress(const sockaddr_storage& ss) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, text, sizeof(text));
  } else if (ss.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, text, sizeof(text));
  }
  return text;
}

bool Reserved(const std::string& name) {
  return EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "content-type") ||
         EqualsIgnoreCase(name, "connection") || EqualsIgnoreCase(name, "transfer-encoding");
}

// A protocol switch's answer: the status line and the handler's headers, nothing else (HttpResponse::take_over).
std::string SerializeSwitch(const HttpResponse& r) {
  std::string s = "HTTP/1.1 " + std::to_string(r.status) + " " + std::string(ReasonPhrase(r.status)) + "\r\n";
  for (const auto& [k, v] : r.headers) s.append(k).append(": ").append(v).append("\r\n");
  return s.append("\r\n");
}

bool Bodyless(const HttpResponse& r) { return r.status == 204 || r.status == 304; }

// The answer's status line and headers, with the empty line after them; its body is sent from the response's own
// string (a 10 MB /metrics is not copied into a second buffer).
std::string SerializeHead(const HttpResponse& r, bool close, int version_minor) {
  if (r.take_over) return SerializeSwitch(r);
  const bool bodyless = Bodyless(r);
  std::string s;
  s.reserve(128 + r.content_type.size() + r.headers.size() * 48);
  s.append("HTTP/1.1 ").append(std::to_string(r.status)).append(" ").append(ReasonPhrase(r.status)).append("\r\n");
  if (!bodyless) {
    s.append("Content-Type: ").append(r.content_type).append("\r\n");
    s.append("Content-Length: ").append(std::to_string(r.body.size())).append("\r\n");
  }
  if (close) {
    s.append("Connection: close\r\n");
  } else if (version_minor == 0) {
    s.append("Connection: keep-alive\r\n");
  }
  for (const auto& [k, v] : r.headers) {
    if (!Reserved(k)) s.append(k).append(": ").append(v).append("\r\n");
  }
  s.append("\r\n");
  return s;
}

// The body to send after SerializeHead: none for HEAD, 204, 304 and a protocol switch.
std::string TakeBody(HttpResponse& r, bool head) {
  if (head || r.take_over || Bodyless(r)) return {};
  return std::move(r.body);
}

// The whole answer in one buffer, for the transport's own short answers (errors).
std::string Serialize(HttpResponse r, bool close, int version_minor) {
  std::string s = SerializeHead(r, close, version_minor);
  return s.append(TakeBody(r, false));
}

// One client connection, owned by the event loop.
struct Conn {
  enum class Phase {
    kHead,     // reading a request head (deadline: header timeout)
    kBody,     // reading its body (deadline: body timeout)
    kBusy,     // the handler runs; nothing is read (no deadline)
    kWriting,  // writing the answer (deadline: no progress for the write timeout)
    kIdle,     // keep-alive, between requests (deadline: idle timeout)
    kLinger,   // answered and half-closed: unread input is drained, then closed (deadline: kLingerMs)
  };
  Conn(int f, uint64_t i, std::string p, bool c, const HttpLimits& limits)
      : fd(f), id(i), peer(std::move(p)), counted(c), parser(limits) {}

  int fd;
  uint64_t id;  // unique for the server's life: a worker's answer for a closed connection is dropped
  std::string peer;
  bool counted;  // counts against the caps (false: refused, only answered 503)
  Phase phase = Phase::kHead;
  int64_t deadline = 0;
  uint32_t events = 0;  // the epoll interest now
  bool peer_closed = false;
  bool continue_sent = false;
  bool close_after_write = false;
  int version_minor = 1;
  size_t reserved = 0;  // this connection's body, as counted in Impl::buffered_bodies
  std::string in;       // unread input, from the current request's first byte
  RequestParser parser;
  std::string out;       // the answer's head (or all of a short answer), then
  std::string out_body;  // its body; out_pos counts through both
  size_t out_pos = 0;
  std::function<void(int, std::string)> take_over;  // set: handed over once `out` is written
};

struct Job {
  int fd;
  uint64_t id;
  HttpRequest request;
};

struct Done {
  int fd;
  uint64_t id;
  std::string head;  // SerializeHead
  std::string body;  // TakeBody
  bool close;
  std::function<void(int, std::string)> take_over;
};

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  Handler handler;
  ErrorResponder errors;
  HttpServerStats stats;
  int max_connections = 0;
  int max_lingering = 0;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1, spare_fd = -1;
  std::atomic<bool> stopping{false};

  // Event loop state (the loop thread only).
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  std::unordered_map<std::string, int> per_client;
  int counted_open = 0;
  int lingering = 0;
  size_t buffered_bodies = 0;  // the bodies being received (Conn::reserved, summed)
  uint64_t next_id = 1;
  int64_t now = 0;
  std::vector<char> read_buffer = std::vector<char>(kReadChunk);

  // Workers: jobs in, answers out (the loop is woken through wake_fd).
  std::mutex jobs_mu;
  std::condition_variable jobs_cv;
  std::deque<Job> jobs;
  bool workers_stop = false;
  std::vector<std::thread> workers;
  std::mutex done_mu;
  std::vector<Done> done;

  ~Impl() {
    for (int fd : {listen_fd, epoll_fd, wake_fd, spare_fd}) {
      if (fd >= 0) ::close(fd);
    }
  }

  void Loop();
  void Accept();
  void OnAccepted(int fd, const std::string& peer);
  void OnEvent(int fd, uint32_t events);
  bool OnReadable(Conn& c);
  bool TryParse(Conn& c);
  bool Reserve(Conn& c, size_t bytes);  // counts c's body at `bytes` against max_buffered_body_bytes
  void Release(Conn& c);
  bool RespondError(Conn& c, int status, const std::string& message);
  bool TryWrite(Conn& c);
  void OnAnswers();
  void Sweep();
  void SetEvents(Conn& c, uint32_t events);
  void Forget(Conn& c);  // drops c's accounting and its epoll registration; the socket stays open
  void Close(Conn& c);
  void HandOver(Conn& c);  // gives c's socket to its take_over (c is destroyed)
  void Work();
  HttpResponse ErrorResponse(int status, const std::string& message) const;
};

HttpServer::HttpServer(HttpServerOptions options, Handler handler, ErrorResponder errors)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->handler = std::move(handler);
  impl_->errors = std::move(errors);
  impl_->max_connections = options.max_connections;
  impl_->max_lingering = 64;
  // Made here, not in Bind, so that Stop() from another thread never races their creation.
  impl_->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  impl_->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

HttpServer::~HttpServer() {
  Stop();
  for (auto& [fd, c] : impl_->conns) ::close(fd);
}

int HttpServer::effective_max_connections() const { return impl_->max_connections; }
const HttpServerStats& HttpServer::stats() const { return impl_->stats; }

void HttpServer::Stop() {
  impl_->stopping = true;
  if (impl_->wake_fd >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(impl_->wake_fd, &one, sizeof(one));
  }
}

Result<int> HttpServer::Bind(const std::string& host, int port) {
  Impl& s = *impl_;
  if (s.listen_fd >= 0) return FailedPreconditionError("already bound");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return UnavailableError("cannot resolve " + host + ": " + ::gai_strerror(rc));
  }
  int error = 0;
  for (addrinfo* a = found; a != nullptr && s.listen_fd < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));  // not SO_REUSEPORT: one server per port
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      error = errno;
      ::close(fd);
      continue;
    }
    s.listen_fd = fd;
  }
  ::freeaddrinfo(found);
  if (s.listen_fd < 0) {
    return UnavailableError(error == EADDRINUSE ? "address already in use" : std::strerror(error));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(s.listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const int bound_port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                                           : reinterpret_cast<sockaddr_in&>(bound).sin_port);

  // Every connection is a descriptor: take what the hard limit allows, keep some for the rest of the process
  // (store, gRPC, task logs) and for refused connections lingering, and cap the connections to the remainder.
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    if (lim.rlim_cur < lim.rlim_max) {
      rlimit raised = lim;
      raised.rlim_cur = std::min<rlim_t>(lim.rlim_max, 1 << 20);
      if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
    }
    const int64_t fds = static_cast<int64_t>(lim.rlim_cur);
    s.max_lingering = static_cast<int>(std::clamp<int64_t>(fds / 8, 16, 1024));
    const int64_t room = std::max<int64_t>(16, fds - 128 - s.max_lingering);
    s.max_connections = static_cast<int>(std::min<int64_t>(s.options.max_connections, room));
  }
  s.spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (s.epoll_fd < 0 || s.wake_fd < 0) return UnavailableError(std::string("epoll: ") + std::strerror(errno));
  for (int fd : {s.listen_fd, s.wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return UnavailableError(std::string("epoll_ctl: ") + std::strerror(errno));
    }
  }
  return bound_port;
}

Status HttpServer::Serve() {
  Impl& s = *impl_;
  if (s.listen_fd < 0) return FailedPreconditionError("Serve() before a successful Bind()");
  const int workers = std::max(1, s.options.worker_threads);
  for (int i = 0; i < workers; ++i) s.workers.emplace_back([&s] { s.Work(); });
  s.Loop();
  {
    std::lock_guard<std::mutex> lock(s.jobs_mu);
    s.workers_stop = true;
    s.jobs.clear();
  }
  s.jobs_cv.notify_all();
  for (std::thread& t : s.workers) t.join();
  s.workers.clear();
  for (auto& [fd, c] : s.conns) ::close(fd);
  s.conns.clear();
  s.stats.connections_open = 0;
  ::close(s.listen_fd);
  s.listen_fd = -1;
  return Status::Ok();
}

void HttpServer::Impl::Loop() {
  epoll_event events[kMaxEvents];
  int64_t last_sweep = NowMs();
  while (!stopping) {
    const int n = ::epoll_wait(epoll_fd, events, kMaxEvents, static_cast<int>(kSweepMs));
    now = NowMs();
    for (int i = 0; i < n && !stopping; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd) {
        Accept();
      } else if (fd == wake_fd) {
        uint64_t count = 0;
        [[maybe_unused]] ssize_t r = ::read(wake_fd, &count, sizeof(count));
        OnAnswers();
      } else {
        OnEvent(fd, events[i].events);
      }
    }
    if (now - last_sweep >= kSweepMs) {
      Sweep();
      last_sweep = now;
    }
  }
}

void HttpServer::Impl::Accept() {
  for (int accepted = 0; accepted < 1024; ++accepted) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      OnAccepted(fd, PeerAddress(ss));
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if ((errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
      // Out of descriptors: the pending connection would keep the (level-triggered) listening socket readable
      // forever. Free the spare descriptor, take the connection and drop it, and take the spare back.
      ::close(spare_fd);
      const int dropped = ::accept(listen_fd, nullptr, nullptr);
      if (dropped >= 0) ::close(dropped);
      spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      stats.connections_refused.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    return;  // EAGAIN: none left
  }
}

HttpResponse HttpServer::Impl::ErrorResponse(int status, const std::string& message) const {
  if (errors) return errors(status, message);
  HttpResponse r;
  r.status = status;
  r.body = message + "\n";
  return r;
}

void HttpServer::Impl::OnAccepted(int fd, const std::string& peer) {
  int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
  stats.connections_accepted.fetch_add(1, std::memory_order_relaxed);
  int& from_peer = per_client[peer];
  const bool over_total = counted_open >= max_connections;
  const bool over_client = from_peer >= options.max_connections_per_client;
  if (over_total || over_client) {
    if (from_peer == 0) per_client.erase(peer);
    stats.connections_refused.fetch_add(1, std::memory_order_relaxed);
    if (lingering >= max_lingering) {
      ::close(fd);
      return;
    }
    ++lingering;
  } else {
    ++from_peer;
    ++counted_open;
  }
  auto owned = std::make_unique<Conn>(fd, next_id++, peer, !(over_total || over_client), options.limits);
  Conn& c = *owned;
  conns[fd] = std::move(owned);
  stats.connections_open.fetch_add(1, std::memory_order_relaxed);
  c.events = EPOLLIN;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  if (!c.counted) {
    HttpResponse r = ErrorResponse(503, over_total ? "too many connections to the server; retry later"
                                                   : "too many connections from " + peer + "; retry later");
    r.headers.emplace_back("Retry-After", std::to_string(options.retry_after_s));
    c.out = Serialize(std::move(r), true, 1);
    c.out_body.clear();
    c.phase = Conn::Phase::kWriting;
    c.close_after_write = true;
    c.deadline = now + options.write_timeout_ms;
    TryWrite(c);
    return;
  }
  c.deadline = now + options.header_timeout_ms;
}

void HttpServer::Impl::OnEvent(int fd, uint32_t events) {
  auto it = conns.find(fd);
  if (it == conns.end()) return;
  Conn& c = *it->second;
  if (events & (EPOLLERR | EPOLLHUP)) {
    Close(c);
    return;
  }
  if ((events & EPOLLIN) && !OnReadable(c)) return;
  if ((events & EPOLLOUT) && c.phase == Conn::Phase::kWriting) TryWrite(c);
}

bool HttpServer::Impl::OnReadable(Conn& c) {
  if (c.phase == Conn::Phase::kBusy || c.phase == Conn::Phase::kWriting) return true;
  size_t total = 0;
  while (total < kMaxReadPerEvent) {
    size_t want = read_buffer.size();
    if (c.phase == Conn::Phase::kHead || c.phase == Conn::Phase::kIdle) {
      // Before its head is complete a connection holds no more than the head limit (+1, to see it passed).
      const size_t limit = options.limits.max_header_bytes + 1;
      want = std::min(want, limit > c.in.size() ? limit - c.in.size() : 1);
    }
    const ssize_t n = ::recv(c.fd, read_buffer.data(), want, 0);
    if (n > 0) {
      total += static_cast<size_t>(n);
      if (c.phase == Conn::Phase::kLinger) continue;  // drained and dropped
      c.in.append(read_buffer.data(), static_cast<size_t>(n));
      if (c.phase == Conn::Phase::kIdle) {
        c.phase = Conn::Phase::kHead;
        c.deadline = now + options.header_timeout_ms;
      }
      if (!TryParse(c)) return false;
      if (c.phase != Conn::Phase::kHead && c.phase != Conn::Phase::kBody) return true;  // nothing more to read now
      if (static_cast<size_t>(n) < want) break;  // drained, most likely: skip the EAGAIN call
      continue;
    }
    if (n == 0) {
      c.peer_closed = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    Close(c);
    return false;
  }
  if (!c.peer_closed) return true;
  if (c.phase == Conn::Phase::kLinger || c.phase == Conn::Phase::kIdle) {
    Close(c);  // the client closed: after our answer, or its idle keep-alive connection
    return false;
  }
  return TryParse(c);  // a request the client finished before closing is still answered; a partial one is not
}

bool HttpServer::Impl::TryParse(Conn& c) {
  switch (c.parser.Parse(c.in)) {
    case ParseState::kNeedHead:
      break;
    case ParseState::kNeedBody:
      if (!Reserve(c, c.parser.body_bytes_expected())) {
        stats.bodies_refused.fetch_add(1, std::memory_order_relaxed);
        return RespondError(c, 503, "too many request bodies being received; retry later");
      }
      if (c.phase != Conn::Phase::kBody) {
        c.phase = Conn::Phase::kBody;
        c.deadline = now + options.body_timeout_ms;
        if (c.parser.request().expect_continue && !c.continue_sent) {
          c.continue_sent = true;
          // Nothing else is being written now (one request at a time), so this small write does not block.
          if (::send(c.fd, kContinue, sizeof(kContinue) - 1, MSG_NOSIGNAL) != sizeof(kContinue) - 1) {
            Close(c);
            return false;
          }
        }
      }
      break;
    case ParseState::kComplete: {
      Release(c);  // the body goes to a worker (at most worker_threads of them at once)
      Job job{c.fd, c.id, std::move(c.parser.request())};
      c.in.erase(0, c.parser.consumed());
      c.parser.Reset();
      c.continue_sent = false;
      c.phase = Conn::Phase::kBusy;
      c.version_minor = job.request.version_minor;
      SetEvents(c, 0);
      job.request.peer = c.peer;
      if (job.request.method == "HEAD") {
        job.request.method = "GET";
        job.request.head = true;
      }
      stats.requests.fetch_add(1, std::memory_order_relaxed);
      {
        std::lock_guard<std::mutex> lock(jobs_mu);
        jobs.push_back(std::move(job));
      }
      jobs_cv.notify_one();
      return true;
    }
    case ParseState::kError:
      stats.bad_requests.fetch_add(1, std::memory_order_relaxed);
      return RespondError(c, c.parser.error_status(), c.parser.error_message());
  }
  if (c.peer_closed) {  // the client hung up in the middle of a request: nobody to answer
    Close(c);
    return false;
  }
  return true;
}

bool HttpServer::Impl::Reserve(Conn& c, size_t bytes) {
  if (bytes <= c.reserved) return true;
  if (buffered_bodies + (bytes - c.reserved) > options.max_buffered_body_bytes) return false;
  buffered_bodies += bytes - c.reserved;
  c.reserved = bytes;
  return true;
}

void HttpServer::Impl::Release(Conn& c) {
  buffered_bodies -= c.reserved;
  c.reserved = 0;
}

bool HttpServer::Impl::RespondError(Conn& c, int status, const std::string& message) {
  Release(c);
  HttpResponse r = ErrorResponse(status, message);
  if (status == 503) r.headers.emplace_back("Retry-After", std::to_string(options.retry_after_s));
  c.out = Serialize(std::move(r), true, c.parser.request().version_minor);
  c.out_body.clear();
  c.out_pos = 0;
  c.phase = Conn::Phase::kWriting;
  c.close_after_write = true;
  c.deadline = now + options.write_timeout_ms;
  return TryWrite(c);
}

bool HttpServer::Impl::TryWrite(Conn& c) {
  while (c.out_pos < c.out.size() + c.out_body.size()) {
    // Head and body in one call while any of the head is left.
    iovec parts[2];
    size_t count = 0;
    if (c.out_pos < c.out.size()) {
      parts[count++] = {c.out.data() + c.out_pos, c.out.size() - c.out_pos};
      if (!c.out_body.empty()) parts[count++] = {c.out_body.data(), c.out_body.size()};
    } else {
      const size_t at = c.out_pos - c.out.size();
      parts[count++] = {c.out_body.data() + at, c.out_body.size() - at};
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = count;
    const ssize_t n = ::sendmsg(c.fd, &message, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_pos += static_cast<size_t>(n);
      c.deadline = now + options.write_timeout_ms;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      SetEvents(c, EPOLLOUT);
      return true;
    }
    Close(c);
    return false;
  }
  c.out_pos = 0;
  if (c.take_over) {
    HandOver(c);
    return false;
  }
  if (c.out.capacity() > (1 << 20)) {
    std::string().swap(c.out);
  } else {
    c.out.clear();
  }
  std::string().swap(c.out_body);
  if (c.close_after_write || (c.peer_closed && c.in.empty())) {
    // Half-close and drain what the client still sends, so that it reads the answer rather than a reset.
    ::shutdown(c.fd, SHUT_WR);
    c.phase = Conn::Phase::kLinger;
    c.deadline = now + kLingerMs;
    c.in.clear();
    SetEvents(c, EPOLLIN);
    return true;
  }
  c.phase = Conn::Phase::kIdle;
  c.deadline = now + options.idle_timeout_ms;
  SetEvents(c, EPOLLIN);
  if (c.in.empty()) return true;
  c.phase = Conn::Phase::kHead;  // a pipelined request is already here
  c.deadline = now + options.header_timeout_ms;
  return TryParse(c);
}

void HttpServer::Impl::OnAnswers() {
  std::vector<Done> answers;
  {
    std::lock_guard<std::mutex> lock(done_mu);
    answers.swap(done);
  }
  for (Done& d : answers) {
    auto it = conns.find(d.fd);
    if (it == conns.end() || it->second->id != d.id || it->second->phase != Conn::Phase::kBusy) continue;
    Conn& c = *it->second;
    c.out = std::move(d.head);
    c.out_body = std::move(d.body);
    c.out_pos = 0;
    c.close_after_write = d.close;
    c.take_over = std::move(d.take_over);
    c.phase = Conn::Phase::kWriting;
    c.deadline = now + options.write_timeout_ms;
    TryWrite(c);
  }
}

void HttpServer::Impl::Sweep() {
  std::vector<int> late;
  for (const auto& [fd, c] : conns) {
    if (c->phase != Conn::Phase::kBusy && c->deadline <= now) late.push_back(fd);
  }
  for (int fd : late) {
    auto it = conns.find(fd);
    if (it == conns.end()) continue;
    Conn& c = *it->second;
    switch (c.phase) {
      case Conn::Phase::kHead:
      case Conn::Phase::kBody: {
        stats.timeouts.fetch_add(1, std::memory_order_relaxed);
        if (c.in.empty() && c.phase == Conn::Phase::kHead) {
          Close(c);  // never sent a byte of this request: nothing to answer
          break;
        }
        const bool head = c.phase == Conn::Phase::kHead;
        const int64_t ms = head ? options.header_timeout_ms : options.body_timeout_ms;
        RespondError(
            c, 408,
            std::string(head ? "request head" : "request body") + " not received within " + std::to_string(ms) + " ms");
        break;
      }
      case Conn::Phase::kWriting:
        stats.timeouts.fetch_add(1, std::memory_order_relaxed);
        Close(c);
        break;
      default:
        Close(c);
        break;
    }
  }
}

void HttpServer::Impl::SetEvents(Conn& c, uint32_t events) {
  if (c.events == events) return;
  c.events = events;
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = c.fd;
  ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
}

void HttpServer::Impl::Forget(Conn& c) {
  Release(c);
  if (c.counted) {
    --counted_open;
    auto it = per_client.find(c.peer);
    if (it != per_client.end() && --it->second <= 0) per_client.erase(it);
  } else {
    --lingering;
  }
  ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
  stats.connections_open.fetch_sub(1, std::memory_order_relaxed);
}

void HttpServer::Impl::Close(Conn& c) {
  const int fd = c.fd;
  Forget(c);
  ::close(fd);
  conns.erase(fd);  // destroys c
}

void HttpServer::Impl::HandOver(Conn& c) {
  const int fd = c.fd;
  Forget(c);
  stats.taken_over.fetch_add(1, std::memory_order_relaxed);
  std::function<void(int, std::string)> take_over = std::move(c.take_over);
  std::string unread = std::move(c.in);
  conns.erase(fd);  // destroys c
  take_over(fd, std::move(unread));
}

void HttpServer::Impl::Work() {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(jobs_mu);
      jobs_cv.wait(lock, [this] { return workers_stop || !jobs.empty(); });
      if (workers_stop) return;
      job = std::move(jobs.front());
      jobs.pop_front();
    }
    HttpResponse r;
    try {
      r = handler(job.request);
    } catch (const std::exception& e) {
      r = ErrorResponse(500, std::string("unexpected error: ") + e.what());
    } catch (...) {
      r = ErrorResponse(500, "unexpected error");
    }
    const bool close = !r.take_over && (r.close || !job.request.keep_alive);
    Done d{job.fd,
           job.id,
           SerializeHead(r, close, job.request.version_minor),
           TakeBody(r, job.request.head),
           close,
           std::move(r.take_over)};
    {
      std::lock_guard<std::mutex> lock(done_mu);
      done.push_back(std::move(d));
    }
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof(one));
  }
}

}  // namespace xpool::http
