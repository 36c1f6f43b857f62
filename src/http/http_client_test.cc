// SendHttpRequest through real sockets on 127.0.0.1: against this project's HttpServer, against Python's
// http.server (a server we did not write: HTTP/1.0, the body up to the close), and against a scripted one-shot
// server for the framings and failures the others do not produce (chunked, a close midway, garbage, silence).
#include "http/http_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "common/testing/test_util.h"
#include "http/http_server.h"

namespace xpool::http {
namespace {

// A listening socket on 127.0.0.1 that accepts one connection, reads the request head and answers `script`
// (raw bytes), then closes; with `hold_ms` it waits that long before answering.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::string script, int hold_ms = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    EXPECT_EQ(::listen(fd_, 4), 0);
    thread_ = std::thread([this, script = std::move(script), hold_ms] {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      std::string seen;
      while (seen.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c, buf, sizeof(buf), 0);
        if (n <= 0) break;
        seen.append(buf, static_cast<size_t>(n));
      }
      request_ = seen;
      std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
      if (::send(c, script.data(), script.size(), MSG_NOSIGNAL) < 0) return;
      ::close(c);
    });
  }
  ~ScriptedServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& request() const { return request_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::string request_;
  std::thread thread_;
};

HttpRequest Get(std::string target) {
  HttpRequest r;
  r.method = "GET";
  r.target = std::move(target);
  return r;
}

TEST(ParseServerUrlTest, AcceptsHostsPortsAndIpv6AndNamesWhatIsWrong) {
  Result<ServerAddress> a = ParseServerUrl("http://localhost:8080/");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->host, "localhost");
  EXPECT_EQ(a->port, 8080);
  EXPECT_EQ(a->host_header, "localhost:8080");
  Result<ServerAddress> b = ParseServerUrl("http://[::1]:9");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->host_header, "[::1]:9");
  Result<ServerAddress> c = ParseServerUrl("http://example.org");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port, 80);
  for (const char* bad : {"https://h:1", "h:1", "http://", "http://h:0", "http://h:70000", "http://h:x",
                          "http://h:1/api", "http://[::1", "http://u@h:1", "http://h:"}) {
    Result<ServerAddress> r = ParseServerUrl(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

TEST(PercentEncodeTest, KeepsUnreservedBytesAndEncodesTheRest) {
  EXPECT_EQ(PercentEncode("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(PercentEncode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
  EXPECT_EQ(PercentDecode(PercentEncode("x y+z%"), false), "x y+z%");
}

TEST(SendHttpRequestTest, TalksToTheProjectsServer) {
  HttpServerOptions options;
  options.worker_threads = 2;
  HttpServer server(
      options,
      [](HttpRequest& r) {
        HttpResponse out;
        out.status = r.path == "/missing" ? 404 : 200;
        out.content_type = "application/json";
        out.body = "{\"m\":\"" + r.method + "\",\"q\":\"" + r.query + "\",\"b\":\"" + r.body + "\",\"auth\":\"" +
                   std::string(r.Header("authorization")) + "\"}";
        out.headers.emplace_back("X-Extra", "yes");
        return out;
      },
      [](int status, const std::string& message) {
        HttpResponse r;
        r.status = status;
        r.body = message;
        return r;
      });
  Result<int> port = server.Bind("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  Status served;
  std::thread thread([&] { served = server.Serve(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(*port);

  HttpRequest post;
  post.method = "POST";
  post.target = "/api?x=1";
  post.body = "hello";
  post.headers.emplace_back("Authorization", "Bearer t0k");
  post.headers.emplace_back("Content-Type", "text/plain");
  Result<HttpResponse> r = SendHttpRequest(url, post);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->content_type, "application/json");
  EXPECT_EQ(r->body, "{\"m\":\"POST\",\"q\":\"x=1\",\"b\":\"hello\",\"auth\":\"Bearer t0k\"}");
  bool extra = false;
  for (const auto& [k, v] : r->headers) extra |= (k == "x-extra" && v == "yes");
  EXPECT_TRUE(extra);

  Result<HttpResponse> missing = SendHttpRequest(url, Get("/missing"));
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_EQ(missing->status, 404);
  server.Stop();
  thread.join();
  EXPECT_TRUE(served.ok()) << served.ToString();
}

TEST(SendHttpRequestTest, ReadsPythonsHttpServerToTheClose) {
  const std::string dir = FreshDir("http_client_py");
  std::ofstream(dir + "/hello.txt") << "from python\n";
  // Python picks a free port and prints it; http.server answers HTTP/1.0 and closes after the body.
  const std::string script = dir + "/serve.py";
  std::ofstream(script) << "import http.server, functools, sys\n"
                           "h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])\n"
                           "s = http.server.HTTPServer(('127.0.0.1', 0), h)\n"
                           "print(s.server_address[1], flush=True)\n"
                           "s.handle_request()\n";
  FILE* py = ::popen(("python3 " + script + " " + dir + " 2>/dev/null").c_str(), "r");
  ASSERT_NE(py, nullptr);
  int port = 0;
  ASSERT_EQ(std::fscanf(py, "%d", &port), 1);
  Result<HttpResponse> r = SendHttpRequest("http://127.0.0.1:" + std::to_string(port), Get("/hello.txt"));
  ::pclose(py);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "from python\n");
}

TEST(SendHttpRequestTest, DecodesChunkedAndCloseDelimitedAnswers) {
  {
    ScriptedServer s(
        "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"
        "5;ext=1\r\nhello\r\nB\r\n, chunked!!\r\n0\r\n\r\n");
    Result<HttpResponse> r = SendHttpRequest(s.url(), Get("/c"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 201);
    EXPECT_EQ(r->body, "hello, chunked!!");
    EXPECT_NE(s.request().find("GET /c HTTP/1.1\r\n"), std::string::npos) << s.request();
    EXPECT_NE(s.request().find("Connection: close\r\n"), std::string::npos) << s.request();
  }
  {
    ScriptedServer s("HTTP/1.0 200 OK\r\n\r\nall of it");
    Result<HttpResponse> r = SendHttpRequest(s.url(), Get("/"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, "all of it");
  }
}

TEST(SendHttpRequestTest, FailuresAreUnavailableWithTheReason) {
  {
    ScriptedServer s("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this");
    Result<HttpResponse> r = SendHttpRequest(s.url(), Get("/"));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(r.status().message().find("closed the connection"), std::string::npos) << r.status().message();
  }
  {
    ScriptedServer s("SSH-2.0-OpenSSH\r\n\r\n");
    Result<HttpResponse> r = SendHttpRequest(s.url(), Get("/"));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("not HTTP/1.x"), std::string::npos) << r.status().message();
  }
  {
    ScriptedServer s("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", /*hold_ms=*/1500);
    Result<HttpResponse> r = SendHttpRequest(s.url(), Get("/"), ClientOptions{.io_timeout_ms = 200});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(r.status().message().find("timed out after 200 ms"), std::string::npos) << r.status().message();
  }
  {
    ScriptedServer s("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'x'));
    Result<HttpResponse> r = SendHttpRequest(s.url(), Get("/"), ClientOptions{.max_response_bytes = 1000});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  }
  // Nothing listens: a port just released by a scripted server that answered and closed.
  std::string url;
  {
    ScriptedServer s("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n");
    url = s.url();
    ASSERT_TRUE(SendHttpRequest(url, Get("/")).ok());
  }
  Result<HttpResponse> refused = SendHttpRequest(url, Get("/"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("refused"), std::string::npos) << refused.status().message();
}

}  // namespace
}  // namespace xpool::http
