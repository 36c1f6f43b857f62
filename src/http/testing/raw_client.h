#pragma once
// RawClient: a blocking TCP client that writes exactly the bytes a test gives it and reads HTTP/1.1 answers
// back, for tests of the transport with real sockets (src/http tests, tests/server). It sends what no library
// client would: trickled heads, pipelined requests, bodies without a length, and it can stop reading.
// Header-only and test-only. Owned by one test thread; not thread-safe.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace xpool::testing {

struct RawResponse {
  int status = 0;
  std::string head;  // status line and headers, without the empty line
  std::string body;

  // The first header named `name` (ASCII case ignored), "" when absent.
  std::string Header(std::string_view name) const {
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos + 2 < head.size()) {
      const size_t start = pos + 2;
      const size_t end = head.find("\r\n", start);
      std::string_view line = std::string_view(head).substr(start, end == std::string::npos ? end : end - start);
      const size_t colon = line.find(':');
      if (colon == name.size()) {
        bool same = true;
        for (size_t i = 0; i < colon && same; ++i) {
          same = std::tolower(static_cast<unsigned char>(line[i])) == std::tolower(static_cast<unsigned char>(name[i]));
        }
        if (same) {
          std::string_view v = line.substr(colon + 1);
          while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
          return std::string(v);
        }
      }
      pos = end;
    }
    return "";
  }
};

class RawClient {
 public:
  // Connects to 127.0.0.1:port; connected() says whether it worked. `receive_buffer` > 0 sets SO_RCVBUF (a
  // small one makes a client that stops reading fill up fast).
  explicit RawClient(int port, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (receive_buffer > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    int yes = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  size_t bytes_read() const { return bytes_read_; }  // every byte received so far, answers and discarded input
  // True when nothing has come back yet and the server has not closed: poll() reports no event at once.
  bool Quiet() const {
    pollfd p{fd_, POLLIN, 0};
    return fd_ >= 0 && buffer_.empty() && ::poll(&p, 1, 0) == 0;
  }

  bool Send(std::string_view bytes) {
    while (!bytes.empty() && fd_ >= 0) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return fd_ >= 0;
  }

  // One answer (head, then a Content-Length body unless `head_only`), waiting at most `timeout_ms` in all;
  // nullopt on timeout or when the server closed first.
  std::optional<RawResponse> Read(int timeout_ms = 5000, bool head_only = false) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    size_t end = std::string::npos;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return std::nullopt;
    }
    RawResponse r;
    r.head = buffer_.substr(0, end);
    if (r.head.size() > 12 && r.head.compare(0, 5, "HTTP/") == 0) r.status = std::atoi(r.head.c_str() + 9);
    const std::string length = r.Header("content-length");
    const size_t body = head_only || length.empty() ? 0 : std::stoul(length);
    while (buffer_.size() < end + 4 + body) {
      if (!Fill(deadline)) return std::nullopt;
    }
    r.body = buffer_.substr(end + 4, body);
    buffer_.erase(0, end + 4 + body);
    return r;
  }

  // True when the server closes the connection (EOF or reset) within `timeout_ms`; input is discarded.
  bool WaitClosed(int timeout_ms = 5000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      buffer_.clear();
      if (!Fill(deadline)) return closed_;
    }
  }

 private:
  // Reads what is there, waiting until `deadline`; false on timeout, EOF or error (closed_ then).
  bool Fill(std::chrono::steady_clock::time_point deadline) {
    if (fd_ < 0 || closed_) return false;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
    bytes_read_ += static_cast<size_t>(n);
    return true;
  }

  int fd_ = -1;
  bool closed_ = false;
  size_t bytes_read_ = 0;
  std::string buffer_;
};

}  // namespace xpool::testing
