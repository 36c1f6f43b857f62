// TunnelPool over socketpairs, and HttpServer handing a connection over (HttpResponse::take_over) to a tunnel:
// bytes both ways, half-close, the idle timeout, the cap, and a stalled peer that does not hold up another
// tunnel. Every wait has a bound; nothing asserts a duration.
#include "http/tunnel.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "http/http_client.h"
#include "http/http_server.h"
#include "http/testing/raw_client.h"

namespace xpool::http {
namespace {

struct Pair {
  int ours = -1, theirs = -1;  // `theirs` goes to the pool
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    ours = fds[0];
    theirs = fds[1];
  }
  ~Pair() {
    if (ours >= 0) ::close(ours);
  }
};

void Write(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), ssize_t(bytes.size()));
}

// Reads until `want` bytes came, EOF, or 5 s.
std::string ReadSome(int fd, size_t want) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got.size() < want && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// True when the peer closed (EOF) within 5 s; data before it is skipped.
bool SeesEof(int fd) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    if (::recv(fd, buf, sizeof(buf), 0) <= 0) return true;
  }
  return false;
}

bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

TEST(TunnelPoolTest, MovesBytesBothWaysFirstTheBufferedOnes) {
  TunnelPool pool;
  Pair client, upstream;
  std::atomic<int> activity{0};
  ASSERT_TRUE(pool.Add(client.theirs, "early-up", upstream.theirs, "early-down", [&] { ++activity; }).ok());
  EXPECT_EQ(ReadSome(upstream.ours, 8), "early-up");
  EXPECT_EQ(ReadSome(client.ours, 10), "early-down");
  Write(client.ours, "ping");
  EXPECT_EQ(ReadSome(upstream.ours, 4), "ping");
  Write(upstream.ours, "pong");
  EXPECT_EQ(ReadSome(client.ours, 4), "pong");
  EXPECT_GE(activity.load(), 1);
  EXPECT_EQ(pool.open(), 1);
}

TEST(TunnelPoolTest, HalfCloseIsPassedOnThenBothClose) {
  TunnelPool pool;
  Pair client, upstream;
  ASSERT_TRUE(pool.Add(client.theirs, "", upstream.theirs, "").ok());
  Write(client.ours, "last words");
  ::shutdown(client.ours, SHUT_WR);
  EXPECT_EQ(ReadSome(upstream.ours, 100), "last words");  // then EOF: the client's half-close arrived
  Write(upstream.ours, "reply after the client's EOF");
  EXPECT_EQ(ReadSome(client.ours, 28), "reply after the client's EOF");
  ::shutdown(upstream.ours, SHUT_WR);
  EXPECT_TRUE(SeesEof(client.ours));
  EXPECT_TRUE(WaitFor([&] { return pool.open() == 0; }));
}

TEST(TunnelPoolTest, IdleTunnelsCloseAndTheCapRefuses) {
  TunnelOptions o;
  o.idle_timeout_ms = 300;
  o.max_tunnels = 1;
  TunnelPool pool(o);
  Pair a1, b1, a2, b2;
  ASSERT_TRUE(pool.Add(a1.theirs, "", b1.theirs, "").ok());
  Status refused = pool.Add(a2.theirs, "", b2.theirs, "");
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused.ToString();
  EXPECT_TRUE(SeesEof(a2.ours));  // refused sockets are closed, not leaked
  EXPECT_TRUE(SeesEof(a1.ours));  // idle past 300 ms
  EXPECT_TRUE(WaitFor([&] { return pool.open() == 0; }));
}

TEST(TunnelPoolTest, AStalledReaderDoesNotHoldUpAnotherTunnel) {
  TunnelOptions o;
  o.buffer_bytes = 64 << 10;
  TunnelPool pool(o);
  Pair slow_client, slow_upstream, client, upstream;
  ASSERT_TRUE(pool.Add(slow_client.theirs, "", slow_upstream.theirs, "").ok());
  ASSERT_TRUE(pool.Add(client.theirs, "", upstream.theirs, "").ok());
  // The slow client never reads: the upstream's writes fill the socket buffers and the tunnel's, then block.
  const std::string chunk(64 << 10, 'x');
  size_t written = 0;
  for (int i = 0; i < 200; ++i) {
    const ssize_t n = ::send(slow_upstream.ours, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  EXPECT_LT(written, 200 * chunk.size());  // back-pressure reached the writer
  Write(client.ours, "still moving");
  EXPECT_EQ(ReadSome(upstream.ours, 12), "still moving");
}

// A handler that answers 101 and hands the connection to a tunnel whose other end the test holds.
TEST(TunnelPoolTest, HttpServerHandsAConnectionOverAfter101) {
  TunnelPool pool;
  Pair upstream;
  const int upstream_fd = upstream.theirs;
  HttpServerOptions options;
  options.worker_threads = 2;
  HttpServer server(options, [&](HttpRequest& r) {
    HttpResponse out;
    if (r.Header("upgrade") != "websocket") return out;
    out.status = 101;
    out.headers = {{"Upgrade", "websocket"}, {"Connection", "Upgrade"}};
    out.take_over = [&pool, upstream_fd](int fd, std::string unread) {
      (void)pool.Add(fd, std::move(unread), upstream_fd, "");
    };
    return out;
  });
  Result<int> port = server.Bind("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  std::thread serving([&] { (void)server.Serve(); });
  {
    testing::RawClient c(*port);
    ASSERT_TRUE(c.Send("GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"));
    std::optional<testing::RawResponse> r = c.Read(5000, /*head_only=*/true);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 101);
    EXPECT_EQ(r->Header("connection"), "Upgrade");
    EXPECT_EQ(r->Header("content-length"), "");
    ASSERT_TRUE(c.Send("frame from the client"));
    EXPECT_EQ(ReadSome(upstream.ours, 21), "frame from the client");
    Write(upstream.ours, "frame from upstream");
    EXPECT_EQ(ReadSome(c.fd(), 19), "frame from upstream");
    EXPECT_EQ(server.stats().taken_over.load(), 1);
    EXPECT_EQ(server.stats().connections_open.load(), 0);  // no longer the server's
  }
  server.Stop();
  serving.join();
}

// SendUpgradeRequest: a 101 leaves the connection open with the bytes after the head; anything else is a whole
// answer and no connection. The request's own Host header is sent.
TEST(TunnelPoolTest, SendUpgradeRequestKeepsTheConnectionOn101) {
  TunnelPool pool;
  Pair upstream;
  const int upstream_fd = upstream.theirs;
  HttpServerOptions options;
  options.worker_threads = 2;
  HttpServer server(options, [&](HttpRequest& r) {
    HttpResponse out;
    if (r.path != "/ws") {
      out.status = 426;
      out.body = "host=" + std::string(r.Header("host"));
      return out;
    }
    out.status = 101;
    out.headers = {{"Upgrade", "websocket"}, {"Connection", "Upgrade"}};
    out.take_over = [&pool, upstream_fd](int fd, std::string unread) {
      (void)pool.Add(fd, std::move(unread), upstream_fd, "first bytes");
    };
    return out;
  });
  Result<int> port = server.Bind("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  std::thread serving([&] { (void)server.Serve(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(*port);
  HttpRequest request;
  request.method = "GET";
  request.target = "/plain";
  request.headers = {{"Host", "browser.example:8470"}, {"Connection", "Upgrade"}, {"Upgrade", "websocket"}};
  Result<UpgradeResult> refused = SendUpgradeRequest(url, request);
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->fd, -1);
  EXPECT_EQ(refused->response.status, 426);
  EXPECT_EQ(refused->response.body, "host=browser.example:8470");
  request.target = "/ws";
  Result<UpgradeResult> switched = SendUpgradeRequest(url, request);
  ASSERT_TRUE(switched.ok()) << switched.status().ToString();
  ASSERT_GE(switched->fd, 0);
  EXPECT_EQ(switched->response.status, 101);
  std::string got = switched->unread + ReadSome(switched->fd, 11 - switched->unread.size());
  EXPECT_EQ(got, "first bytes");
  Write(switched->fd, "up");
  EXPECT_EQ(ReadSome(upstream.ours, 2), "up");
  ::close(switched->fd);
  server.Stop();
  serving.join();
}

}  // namespace
}  // namespace xpool::http
