// End-to-end: the real `xpool server` binary's HTTP transport against slow, odd and hostile clients, and against
// clients we did not write (curl, Python's http.client).
// - 500 connections trickling header bytes: /healthz keeps answering, each probe within a generous bound (the
//   p99 target is measured by xpool_server_load --mode slow, not here), and the 500 stay open.
// - A POST without Content-Length is answered at once (it has no body); oversized heads and bodies get 431/413
//   with a JSON error; pipelined requests are answered in order; a client that stops reading its answer is
//   dropped after --write-timeout-ms while others are served; past --max-connections-per-client: 503.
// - curl: several URLs on one keep-alive connection, --limit-rate uploads, Expect: 100-continue, HEAD.
// - Python http.client: keep-alive, a chunked upload, HEAD, on one socket.
// - Studio's static route: no file outside the built bundle, however the path is written (issue: `//` + path).
#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "http/testing/raw_client.h"
#include "support/xpool_process.h"

namespace xpool::testing {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// Runs `command` through the shell; its stdout, *code its exit status.
std::string Shell(const std::string& command, int* code) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) {
    *code = -1;
    return out;
  }
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string ErrorCode(const std::string& text) {
  const json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return body.is_object() && body.contains("error") ? body["error"].value("code", "") : "";
}

class HttpTransportTest : public ::testing::Test {
 protected:
  void Start(const std::string& name, const std::string& flags = "") {
    dir_ = TempDir("http_" + name);
    server_ = std::make_unique<ServerProcess>(XpoolBinary(), dir_.string());
    ASSERT_TRUE(server_->Start("--agent-listen off " + flags)) << server_->Log();
    token_ = server_->AdminToken();
  }
  std::string Auth() const { return "Authorization: Bearer " + token_ + "\r\n"; }
  int port() const { return server_->port(); }
  // GET /healthz on a new connection; its status, 0 when no answer came within `timeout_ms`.
  int Healthz(int timeout_ms) {
    RawClient c(port());
    if (!c.Send("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")) return 0;
    auto r = c.Read(timeout_ms);
    return r ? r->status : 0;
  }

  std::filesystem::path dir_;
  std::unique_ptr<ServerProcess> server_;
  std::string token_;
};

TEST_F(HttpTransportTest, FiveHundredSlowConnectionsDoNotStallHealthz) {
  Start("slow");
  constexpr int kSlow = 500;
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(std::make_unique<RawClient>(port()));
    ASSERT_TRUE(slow.back()->connected()) << "connection " << i;
    ASSERT_TRUE(slow.back()->Send("GET /healthz HTTP/1.1\r\nX-Slow: "));
  }
  // The 500 trickle one header byte each every 200 ms for 4 s (well inside the 10 s header deadline), while a
  // new connection asks /healthz every 50 ms.
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    while (!stop) {
      for (auto& c : slow) c->Send("a");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  int probes = 0, answered = 0;
  double worst_ms = 0;
  const auto end = SteadyClock::now() + std::chrono::seconds(4);
  while (SteadyClock::now() < end) {
    const auto t0 = SteadyClock::now();
    const int status = Healthz(2000);  // generous: the point is answered at all, not how fast
    worst_ms = std::max(worst_ms, std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count());
    ++probes;
    if (status == 200) ++answered;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stop = true;
  trickle.join();
  EXPECT_GE(probes, 10);
  EXPECT_EQ(answered, probes) << "slowest probe " << worst_ms << " ms\n" << server_->Log();
  int open = 0;
  for (auto& c : slow) open += c->Quiet() ? 1 : 0;  // neither answered nor closed: held, at no thread's cost
  EXPECT_EQ(open, kSlow);
}

TEST_F(HttpTransportTest, PostWithoutContentLengthIsAnsweredAtOnceAndStoresNothing) {
  Start("nolength");
  RawClient c(port());
  ASSERT_TRUE(c.Send("POST /api/v1/jobs HTTP/1.1\r\nHost: t\r\n" + Auth() + "Content-Type: application/json\r\n\r\n"));
  auto r = c.Read(3000);  // the header deadline is 10 s: this answer is not a timeout's
  ASSERT_TRUE(r) << "no answer to a POST without Content-Length";
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(ErrorCode(r->body), "INVALID_ARGUMENT") << r->body;
  // The body sent anyway is not a request: 400, closed.
  ASSERT_TRUE(c.Send(R"({"name":"x","command":["true"],"resources":{"cpu":1}})"
                     "\r\n\r\n"));
  auto garbage = c.Read(3000);
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->status, 400);
  EXPECT_TRUE(c.WaitClosed());
  auto client = server_->Client(token_);
  auto list = client->Get("/api/v1/jobs");
  ASSERT_TRUE(list);
  EXPECT_EQ(json::parse(list->body)["jobs"].size(), 0u) << list->body;
}

TEST_F(HttpTransportTest, OversizedHeadsAndBodiesGet431And413WithAJsonError) {
  Start("limits", "--max-body 4096");
  RawClient head(port());
  ASSERT_TRUE(head.Send("GET /healthz HTTP/1.1\r\nX-Big: " + std::string(40000, 'a') + "\r\n\r\n"));
  auto h = head.Read();
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 431);
  EXPECT_EQ(ErrorCode(h->body), "RESOURCE_EXHAUSTED") << h->body;
  EXPECT_TRUE(head.WaitClosed());

  RawClient body(port());
  ASSERT_TRUE(body.Send("POST /api/v1/jobs HTTP/1.1\r\n" + Auth() + "Content-Length: 5000\r\n\r\n"));
  auto b = body.Read();  // before the body is sent
  ASSERT_TRUE(b);
  EXPECT_EQ(b->status, 413);
  EXPECT_NE(b->body.find("over the limit of 4096 bytes"), std::string::npos) << b->body;

  RawClient chunked(port());
  ASSERT_TRUE(chunked.Send("POST /api/v1/jobs HTTP/1.1\r\n" + Auth() + "Transfer-Encoding: chunked\r\n\r\n" +
                           "800\r\n" + std::string(2048, ' ') + "\r\n" + "800\r\n" + std::string(2048, ' ') + "\r\n" +
                           "1\r\n "));
  auto c = chunked.Read();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 413);
  EXPECT_EQ(Healthz(5000), 200);
}

TEST_F(HttpTransportTest, PipelinedRequestsAreAnsweredInOrder) {
  Start("pipelined");
  const std::string job = R"({"name":"p","command":["true"],"resources":{"cpu":1}})";
  RawClient c(port());
  ASSERT_TRUE(
      c.Send("GET /healthz HTTP/1.1\r\n\r\n"
             "POST /api/v1/jobs HTTP/1.1\r\n" +
             Auth() + "Content-Length: " + std::to_string(job.size()) + "\r\n\r\n" + job +
             "GET /api/v1/jobs/1 HTTP/1.1\r\n" + Auth() + "\r\nGET /api/v1/jobs/1 HTTP/1.1\r\n\r\n"));
  auto health = c.Read();
  auto submitted = c.Read();
  auto got = c.Read();
  auto no_token = c.Read();
  ASSERT_TRUE(health && submitted && got && no_token);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(submitted->status, 201) << submitted->body;
  EXPECT_EQ(got->status, 200) << got->body;
  EXPECT_EQ(json::parse(got->body)["name"], "p");
  EXPECT_EQ(no_token->status, 401) << no_token->body;  // each pipelined request is authenticated on its own
}

TEST_F(HttpTransportTest, AClientThatStopsReadingIsDroppedWhileOthersAreServed) {
  Start("stuck", "--write-timeout-ms 500");
  auto client = server_->Client(token_);
  json job = {{"name", "big"}, {"command", {"true"}}, {"resources", {{"cpu", 1}}}};
  for (int i = 0; i < 8; ++i) job["env"]["PAD" + std::to_string(i)] = std::string(30000, static_cast<char>('a' + i));
  for (int i = 0; i < 40; ++i) {  // the job list is then ~10 MB: more than the socket buffers hold
    auto r = client->Post("/api/v1/jobs", job.dump(), "application/json");
    ASSERT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
  }
  RawClient stuck(port(), /*receive_buffer=*/4096);
  ASSERT_TRUE(stuck.Send("GET /api/v1/jobs HTTP/1.1\r\n" + Auth() + "\r\n"));
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(Healthz(5000), 200) << "probe " << i << " while a client does not read";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto full = client->Get("/api/v1/jobs");
  ASSERT_TRUE(full && full->status == 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the write timeout, still not reading
  EXPECT_TRUE(stuck.WaitClosed(20000));
  EXPECT_LT(stuck.bytes_read(), full->body.size()) << "the stuck client got its whole answer: it was not dropped";
}

TEST_F(HttpTransportTest, PastTheConnectionsPerClientCapNewOnesGet503) {
  Start("cap", "--max-connections-per-client 8");
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 8; ++i) {
    held.push_back(std::make_unique<RawClient>(port()));
    ASSERT_TRUE(held.back()->Send("GET /healthz HTTP/1.1\r\n\r\n"));
    ASSERT_TRUE(held.back()->Read()) << "connection " << i;
  }
  RawClient extra(port());
  auto r = extra.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->Header("Retry-After"), "1");
  EXPECT_EQ(ErrorCode(r->body), "UNAVAILABLE") << r->body;
  held.clear();
  bool back = false;
  for (int i = 0; i < 100 && !back; ++i) {
    back = Healthz(2000) == 200;
    if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(back) << "the cap was not released after the connections closed";
  auto metrics = server_->Client("")->Get("/metrics");
  ASSERT_TRUE(metrics);
  // At least the one above (a probe may have come before the server saw the held connections close).
  const std::string series = "xpool_http_refused_total{reason=\"connection_cap\"} ";
  const size_t at = metrics->body.find(series);
  ASSERT_NE(at, std::string::npos) << metrics->body;
  EXPECT_GE(std::atoi(metrics->body.c_str() + at + series.size()), 1) << metrics->body;
  EXPECT_NE(metrics->body.find("xpool_http_connections "), std::string::npos) << metrics->body;
}

TEST_F(HttpTransportTest, CurlKeepAliveRateLimitedUploadExpectContinueAndHead) {
  Start("curl");
  int code = 0;
  const std::string url = server_->url();
  // Three URLs in one invocation: one connection, reused (num_connects 1, then 0).
  std::string out = Shell("curl -sS -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} %{num_connects}\\n' " +
                              url + "/healthz " + url + "/readyz " + url + "/healthz 2>&1",
                          &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(out, "200 1\n200 0\n200 0\n");

  // An upload at 4 KiB/s (about 2 s for the body), with and without Expect: 100-continue.
  const std::filesystem::path spec = dir_ / "job.json";
  json job = {{"name", "curl-slow"}, {"command", {"true"}}, {"resources", {{"cpu", 1}}}};
  job["env"]["PAD"] = std::string(8000, 'p');
  std::ofstream(spec) << job.dump();
  for (const std::string expect : {"", "-H 'Expect: 100-continue' "}) {
    SCOPED_TRACE(expect);
    out = Shell("curl -sS --limit-rate 4K " + expect + "-H 'Authorization: Bearer " + token_ +
                    "' -H 'Content-Type: application/json' --data-binary @" + spec.string() + " -w '\\n%{http_code}' " +
                    url + "/api/v1/jobs 2>&1",
                &code);
    ASSERT_EQ(code, 0) << out;
    EXPECT_EQ(out.substr(out.rfind('\n') + 1), "201") << out;
  }
  out = Shell("curl -sS -I " + url + "/healthz 2>&1", &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK", 0), 0u) << out;
  EXPECT_NE(out.find("Content-Length: "), std::string::npos) << out;
  // No token: 401 through curl too.
  out = Shell("curl -s -o /dev/null -w '%{http_code}' " + url + "/api/v1/jobs", &code);
  EXPECT_EQ(out, "401");
}

TEST_F(HttpTransportTest, PythonHttpClientKeepAliveChunkedUploadAndHead) {
  Start("python");
  const std::filesystem::path script = dir_ / "client.py";
  std::ofstream(script) << R"(import http.client, sys
port, token = int(sys.argv[1]), sys.argv[2]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
c.request("GET", "/healthz"); r = c.getresponse(); r.read(); assert r.status == 200, r.status
sock = c.sock
for i in range(5):
    c.request("GET", "/api/v1/jobs?limit=1", headers={"Authorization": "Bearer " + token})
    r = c.getresponse(); r.read(); assert r.status == 200, r.status
def body():
    yield b'{"name":"py-chunked",'
    yield b'"command":["true"],"resources":{"cpu":1}}'
c.request("POST", "/api/v1/jobs", body=body(), encode_chunked=True,
          headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
r = c.getresponse(); text = r.read(); assert r.status == 201, (r.status, text)
c.request("HEAD", "/healthz"); r = c.getresponse(); assert r.status == 200 and r.read() == b"", r.status
assert c.sock is sock, "a new connection was opened"
print("ok")
)";
  int code = 0;
  const std::string out =
      Shell("python3 " + script.string() + " " + std::to_string(port()) + " " + token_ + " 2>&1", &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(out, "ok\n");
  auto list = server_->Client(token_)->Get("/api/v1/jobs");
  ASSERT_TRUE(list);
  EXPECT_NE(list->body.find("py-chunked"), std::string::npos) << list->body;
}

// Studio's static files through the real server and curl (which sends the path as written with --path-as-is):
// `//` + an absolute path, `..` plain, percent-encoded and double-encoded, a symlink planted in the bundle to a
// file outside it and one to a directory outside it. None may answer with the outside file; the state dir's admin
// token is the prize.
TEST_F(HttpTransportTest, StudioServesOnlyTheBundlesOwnFiles) {
  for (const std::string transport : {"epoll", "threads"}) {
    SCOPED_TRACE(transport);
    const std::filesystem::path web = TempDir("http_web_" + transport);
    std::filesystem::create_directories(web / "assets");
    std::ofstream(web / "index.html") << "<!doctype html><title>studio-index</title>";
    std::ofstream(web / "assets" / "app-1.js") << "bundle-js";
    const std::filesystem::path outside = TempDir("http_outside_" + transport);
    std::ofstream(outside / "secret.txt") << "outside-secret";
    std::filesystem::create_symlink(outside / "secret.txt", web / "assets" / "link.js");
    std::filesystem::create_directory_symlink(outside, web / "assets" / "dir");
    Start("studio_" + transport, "--http-transport " + transport + " --web-dir " + web.string());
    const std::string url = server_->url();
    int code = 0;
    std::string out = Shell("curl -sS " + url + "/assets/app-1.js", &code);
    EXPECT_EQ(out, "bundle-js");
    const std::string token_file = (dir_ / "admin.token").string();
    ASSERT_TRUE(std::filesystem::exists(token_file));
    const std::string secret = (outside / "secret.txt").string();
    const std::vector<std::string> paths = {"/" + token_file,
                                            "/" + secret,
                                            "//etc/passwd",
                                            "/%2F" + token_file.substr(1),
                                            "/%252F" + secret.substr(1),
                                            "/../../../../../.." + token_file,
                                            "/%2e%2e/%2e%2e/%2e%2e/%2e%2e" + token_file,
                                            "/%252e%252e/%252e%252e" + secret,
                                            "/..%2f..%2f..%2f..%2f..%2f" + secret.substr(1),
                                            "/assets/link.js",
                                            "/assets/dir/secret.txt",
                                            "/assets%2fdir%2fsecret.txt"};
    for (const std::string& path : paths) {
      SCOPED_TRACE(path);
      out = Shell("curl -sS --path-as-is -w '\\n%{http_code}' '" + url + path + "'", &code);
      EXPECT_EQ(out.find("outside-secret"), std::string::npos) << out;
      EXPECT_EQ(out.find(token_), std::string::npos) << out;
      EXPECT_EQ(out.find("root:"), std::string::npos) << out;
      const std::string status = out.substr(out.rfind('\n') + 1);
      // A name with an extension that is not in the bundle is 404; a route without one is the UI's index.
      EXPECT_TRUE(status == "404" || (status == "200" && out.find("studio-index") != std::string::npos) ||
                  status == "400")
          << out;
    }
    server_.reset();
  }
}

}  // namespace
}  // namespace xpool::testing
