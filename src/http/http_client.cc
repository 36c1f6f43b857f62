#include "http/http_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <optional>
#include <utility>

#include "common/text.h"
#include "http/internal/header_text.h"

namespace xpool::http {
namespace {

// A socket closed when it goes out of scope.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&& other) noexcept {
    if (this != &other) {
      Close();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { Close(); }
  int fd() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }

 private:
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

std::string ErrnoText(int err) { return std::strerror(err); }

using internal::LowerAscii;
using internal::TrimBlanks;

// Waits up to `timeout_ms` for `events` on `fd`: Ok, or Unavailable("timed out ...").
Status WaitFor(int fd, short events, int64_t timeout_ms, std::string_view what) {
  pollfd p{.fd = fd, .events = events, .revents = 0};
  while (true) {
    const int n = ::poll(&p, 1, static_cast<int>(timeout_ms));
    if (n > 0) return Status::Ok();
    if (n == 0) return UnavailableError(std::string(what) + " timed out after " + std::to_string(timeout_ms) + " ms");
    if (errno != EINTR) return UnavailableError(std::string(what) + ": " + ErrnoText(errno));
  }
}

Result<Socket> Connect(const ServerAddress& address, int64_t timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  const int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) return UnavailableError("cannot resolve " + address.host + ": " + ::gai_strerror(rc));
  std::string last_error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (s.fd() < 0) {
      last_error = ErrnoText(errno);
      continue;
    }
    if (::connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_error = ErrnoText(errno);
        continue;
      }
      Status waited = WaitFor(s.fd(), POLLOUT, timeout_ms, "connecting");
      if (!waited.ok()) {
        last_error = waited.message();
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      if (::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) {
        last_error = ErrnoText(err);
        continue;
      }
    }
    ::freeaddrinfo(found);
    return s;
  }
  ::freeaddrinfo(found);
  return UnavailableError(last_error);
}

Status SendAll(int fd, std::string_view bytes, int64_t timeout_ms) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      RETURN_IF_ERROR(WaitFor(fd, POLLOUT, timeout_ms, "sending the request"));
      continue;
    }
    return UnavailableError("sending the request: " + ErrnoText(errno));
  }
  return Status::Ok();
}

// With `upgrade` the request's own Connection header is sent (no "Connection: close"). A Host header among
// request.headers replaces the address's.
std::string RequestBytes(const ServerAddress& address, const HttpRequest& request, bool upgrade) {
  std::string out = request.method + " " + request.target + " HTTP/1.1\r\n";
  if (request.Header("host").empty()) out += "Host: " + address.host_header + "\r\n";
  for (const auto& [name, value] : request.headers) out += name + ": " + value + "\r\n";
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" || request.method == "PATCH") {
    out += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
  }
  out += upgrade ? "\r\n" : "Connection: close\r\n\r\n";
  out += request.body;
  return out;
}

// The parts of an answer read so far.
struct ResponseHead {
  size_t body_start = 0;
  bool chunked = false;
  int64_t content_length = -1;  // -1: up to the close
};

Result<ResponseHead> ParseHead(std::string_view head, HttpResponse* response) {
  const size_t line_end = head.find("\r\n");
  const std::string_view status_line = head.substr(0, line_end);
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.") || status_line[8] != ' ') {
    return UnavailableError("the answer is not HTTP/1.x: \"" + std::string(status_line.substr(0, 40)) + "\"");
  }
  int status = 0;
  const auto [ptr, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, status);
  if (ec != std::errc() || ptr != status_line.data() + 12 || status < 100 || status > 999) {
    return UnavailableError("the answer has no status code: \"" + std::string(status_line.substr(0, 40)) + "\"");
  }
  response->status = status;
  response->content_type.clear();
  ResponseHead out;
  size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string_view::npos) end = head.size();
    const std::string_view line = head.substr(pos, end - pos);
    pos = end + 2;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return UnavailableError("a header line without ':' in the answer");
    std::string name = LowerAscii(TrimBlanks(line.substr(0, colon)));
    std::string value(TrimBlanks(line.substr(colon + 1)));
    if (name == "content-type") {
      response->content_type = value;
    } else if (name == "content-length") {
      int64_t length = -1;
      const auto [p, e] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (e != std::errc() || p != value.data() + value.size() || length < 0) {
        return UnavailableError("the answer's Content-Length \"" + value + "\" is not a length");
      }
      out.content_length = length;
    } else if (name == "transfer-encoding") {
      out.chunked = EqualsIgnoreCase(value, "chunked");
    }
    response->headers.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

// Decodes a chunked body from `raw`; false while it is incomplete.
Result<bool> DecodeChunked(std::string_view raw, std::string* body) {
  body->clear();
  size_t pos = 0;
  while (true) {
    const size_t line_end = raw.find("\r\n", pos);
    if (line_end == std::string_view::npos) return false;
    std::string_view size_text = raw.substr(pos, line_end - pos);
    size_text = size_text.substr(0, size_text.find(';'));  // chunk extensions are ignored
    uint64_t size = 0;
    const auto [p, e] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
    if (e != std::errc() || p != size_text.data() + size_text.size()) {
      return UnavailableError("a bad chunk size \"" + std::string(size_text.substr(0, 20)) + "\" in the answer");
    }
    pos = line_end + 2;
    if (size == 0) return raw.find("\r\n", pos) != std::string_view::npos;  // trailers end with an empty line
    if (raw.size() < pos + size + 2) return false;
    body->append(raw.substr(pos, size));
    pos += size + 2;
  }
}

}  // namespace

Result<ServerAddress> ParseServerUrl(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("bad server URL \"" + std::string(url) + "\": " + std::string(why));
  };
  std::string_view rest = url;
  if (rest.starts_with("https://")) return bad("https is not supported (the server speaks plain HTTP)");
  if (!rest.starts_with("http://")) return bad("it must start with http://");
  rest.remove_prefix(7);
  while (rest.ends_with('/')) rest.remove_suffix(1);
  if (rest.find_first_of("/?#@") != std::string_view::npos) return bad("only http://host[:port] is allowed");
  ServerAddress out;
  std::string_view port_text;
  if (rest.starts_with('[')) {  // [IPv6]:port
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("an IPv6 address without ']'");
    out.host = std::string(rest.substr(1, close - 1));
    std::string_view after = rest.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) return bad("unexpected text after the IPv6 address");
    if (!after.empty()) port_text = after.substr(1);
  } else {
    const size_t colon = rest.rfind(':');
    out.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port_text = rest.substr(colon + 1);
  }
  if (out.host.empty()) return bad("no host");
  if (!port_text.empty() || rest.ends_with(':')) {
    int port = 0;
    const auto [p, e] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (e != std::errc() || p != port_text.data() + port_text.size() || port < 1 || port > 65535) {
      return bad("the port must be 1..65535");
    }
    out.port = port;
  }
  out.host_header = (rest.starts_with('[') ? "[" + out.host + "]" : out.host) + ":" + std::to_string(out.port);
  return out;
}

namespace {

// Reads the answer to a request sent on `fd`. With `upgrade`, a 101 answer ends at its head: *switched is set and
// the bytes after the head are left in *rest.
Result<HttpResponse> ReadAnswer(int fd, const ClientOptions& options, bool upgrade, bool* switched, std::string* rest) {
  HttpResponse response;
  std::string raw;
  std::optional<ResponseHead> head;
  char buffer[64 * 1024];
  while (true) {
    if (!head) {
      const size_t end = raw.find("\r\n\r\n");
      if (end != std::string::npos) {
        ASSIGN_OR_RETURN(ResponseHead parsed, ParseHead(std::string_view(raw).substr(0, end), &response));
        parsed.body_start = end + 4;
        if (upgrade && response.status == 101) {
          *switched = true;
          *rest = raw.substr(parsed.body_start);
          return response;
        }
        if (parsed.content_length > options.max_response_bytes) {
          return ResourceExhaustedError("the answer's body of " + std::to_string(parsed.content_length) +
                                        " bytes is longer than " + std::to_string(options.max_response_bytes));
        }
        // The whole answer in one allocation (a 10 MB /metrics grows by doubling otherwise).
        if (parsed.content_length >= 0) raw.reserve(parsed.body_start + static_cast<size_t>(parsed.content_length));
        head = parsed;
      }
    }
    if (head) {
      const std::string_view body = std::string_view(raw).substr(head->body_start);
      if (head->chunked) {
        ASSIGN_OR_RETURN(bool done, DecodeChunked(body, &response.body));
        if (done) return response;
      } else if (head->content_length >= 0 && static_cast<int64_t>(body.size()) >= head->content_length) {
        raw.resize(head->body_start + static_cast<size_t>(head->content_length));
        raw.erase(0, head->body_start);
        response.body = std::move(raw);
        return response;
      }
    }
    if (static_cast<int64_t>(raw.size()) > options.max_response_bytes) {
      return ResourceExhaustedError("the answer is longer than " + std::to_string(options.max_response_bytes) +
                                    " bytes");
    }
    RETURN_IF_ERROR(WaitFor(fd, POLLIN, options.io_timeout_ms, "waiting for the answer"));
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n > 0) {
      raw.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n < 0) return UnavailableError("reading the answer: " + ErrnoText(errno));
    // The server closed the connection.
    if (head && !head->chunked && head->content_length < 0) {
      response.body = raw.substr(head->body_start);
      return response;
    }
    return UnavailableError("the server closed the connection before the whole answer (" + std::to_string(raw.size()) +
                            " bytes)");
  }
}

}  // namespace

Result<HttpResponse> SendHttpRequest(std::string_view url, const HttpRequest& request, const ClientOptions& options) {
  ASSIGN_OR_RETURN(ServerAddress address, ParseServerUrl(url));
  ASSIGN_OR_RETURN(Socket socket, Connect(address, options.connect_timeout_ms));
  RETURN_IF_ERROR(SendAll(socket.fd(), RequestBytes(address, request, false), options.io_timeout_ms));
  bool switched = false;
  std::string rest;
  return ReadAnswer(socket.fd(), options, false, &switched, &rest);
}

Result<UpgradeResult> SendUpgradeRequest(std::string_view url, const HttpRequest& request,
                                         const ClientOptions& options) {
  ASSIGN_OR_RETURN(ServerAddress address, ParseServerUrl(url));
  ASSIGN_OR_RETURN(Socket socket, Connect(address, options.connect_timeout_ms));
  RETURN_IF_ERROR(SendAll(socket.fd(), RequestBytes(address, request, true), options.io_timeout_ms));
  UpgradeResult out;
  bool switched = false;
  ASSIGN_OR_RETURN(out.response, ReadAnswer(socket.fd(), options, true, &switched, &out.unread));
  if (switched) out.fd = socket.Release();
  return out;
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || u == '-' || u == '.' ||
        u == '_' || u == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

}  // namespace xpool::http
