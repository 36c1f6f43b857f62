// Interactive jobs (kind: interactive, issue 23) end to end on the real binaries: `xpool up --simulate` runs
// echo_task.py (an HTTP page and a WebSocket echo) and the test reaches it only through the server's proxy,
// /api/v1/jobs/{id}/proxy/:
// - an HTTP GET and POST with the tenant's bearer token; another tenant gets 404, no token 401;
// - the browser's way in: the one-time link of POST .../proxy-session is answered 303 with an HttpOnly cookie,
//   with which the page loads (the link works once);
// - a WebSocket echo round trip through the proxy (raw RFC 6455 frames over a plain socket);
// - the ttl and the idle-timeout end the job (cancelled, with the reason as its event);
// - Jupyter: where Debian's jupyter-notebook is installed, a real notebook server behind the proxy answers its
//   API, starts a kernel and opens the kernel's WebSocket (skipped, saying so, elsewhere).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "support/rest_client.h"
#include "support/xpool_process.h"

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;
using xpool::testing::FreePort;
using xpool::testing::RestClient;
using xpool::testing::UpProcess;

constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kJupyter = "/usr/bin/jupyter-notebook";

bool EqualsIgnoreCase(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// A blocking client socket to 127.0.0.1:port with a 10 s receive timeout; -1 when it cannot connect.
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// Reads up to and including "\r\n\r\n"; what came after it is left in *rest.
std::string ReadHead(int fd, std::string* rest) {
  std::string got;
  char buf[4096];
  while (got.find("\r\n\r\n") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return got;
    got.append(buf, static_cast<size_t>(n));
  }
  const size_t end = got.find("\r\n\r\n") + 4;
  *rest = got.substr(end);
  return got.substr(0, end);
}

// A client's WebSocket frame: FIN, `opcode`, masked (as RFC 6455 requires of clients).
std::string ClientFrame(int opcode, const std::string& payload) {
  std::string f;
  f += static_cast<char>(0x80 | opcode);
  if (payload.size() < 126) {
    f += static_cast<char>(0x80 | payload.size());
  } else {
    f += static_cast<char>(0x80 | 126);
    f += static_cast<char>(payload.size() >> 8);
    f += static_cast<char>(payload.size() & 0xff);
  }
  const char mask[4] = {0x12, 0x34, 0x56, 0x78};
  f.append(mask, 4);
  for (size_t i = 0; i < payload.size(); ++i) f += static_cast<char>(payload[i] ^ mask[i % 4]);
  return f;
}

// One unmasked server frame (payload < 64 KiB) from `buffer` + the socket: {opcode, payload}; {-1, ""} on error.
std::pair<int, std::string> ReadFrame(int fd, std::string* buffer) {
  auto need = [&](size_t n) {
    char buf[4096];
    while (buffer->size() < n) {
      const ssize_t got = ::recv(fd, buf, sizeof(buf), 0);
      if (got <= 0) return false;
      buffer->append(buf, static_cast<size_t>(got));
    }
    return true;
  };
  if (!need(2)) return {-1, ""};
  const int opcode = (*buffer)[0] & 0x0f;
  size_t length = (*buffer)[1] & 0x7f, head = 2;
  if (length == 126) {
    if (!need(4)) return {-1, ""};
    length = (static_cast<unsigned char>((*buffer)[2]) << 8) | static_cast<unsigned char>((*buffer)[3]);
    head = 4;
  }
  if (!need(head + length)) return {-1, ""};
  std::string payload = buffer->substr(head, length);
  buffer->erase(0, head + length);
  return {opcode, payload};
}

class InteractiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kPython)) GTEST_SKIP() << kPython << " is not installed: the echo task needs it";
    dir_ = xpool::testing::TempDir(std::string("interactive_") +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    // The task runs as the tenant's unprivileged uid: its script in a directory anyone may read.
    fs::create_directories(dir_ / "task");
    fs::permissions(dir_ / "task", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                       fs::perms::others_read | fs::perms::others_exec);
    const char* source = std::getenv("XPOOL_SOURCE_DIR");
    ASSERT_NE(source, nullptr) << "XPOOL_SOURCE_DIR is set by ctest";
    fs::copy_file(fs::path(source) / "tests/e2e/interactive/echo_task.py", dir_ / "task/echo_task.py");
    fs::permissions(dir_ / "task/echo_task.py", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                                    fs::perms::others_read | fs::perms::others_exec);
    up_ = std::make_unique<UpProcess>(dir_);
    ASSERT_TRUE(up_->Start({"--simulate", "1xA100-80GB", "--node-name", "dev-node"})) << up_->Log();
    admin_ = std::make_unique<RestClient>(up_->port(), up_->token());
    admin_->set_default_wait_seconds(30);
    admin_->set_diagnostics([this] { return "log:\n" + up_->Log(); });
    alice_ = admin_->TenantWithToken({{"name", "alice"}});
    bob_ = admin_->TenantWithToken({{"name", "bob"}});
    ASSERT_FALSE(alice_.empty());
    ASSERT_FALSE(bob_.empty());
  }
  void TearDown() override {
    up_.reset();
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // An interactive job of alice's running `command` (argv) on a free port with `limits` merged in.
  int64_t SubmitInteractive(const std::string& name, const Json& command, Json limits = Json::object()) {
    Json interactive = {{"port", FreePort()}};
    interactive.update(limits);
    Json spec = {{"name", name},
                 {"kind", "interactive"},
                 {"interactive", interactive},
                 {"resources", {{"cpu", "100m"}, {"memory", "256Mi"}}},
                 {"command", command},
                 {"priority", "low"}};
    return admin_->Submit(spec, alice_);
  }
  int64_t SubmitEcho(const std::string& name, Json limits = Json::object()) {
    return SubmitInteractive(name, Json::array({kPython, (dir_ / "task/echo_task.py").string()}), limits);
  }
  std::string Base(int64_t id) { return "/api/v1/jobs/" + std::to_string(id) + "/proxy/"; }
  // GET through the proxy until the task answers (502 while it starts), at most 30 s.
  httplib::Result GetWhenUp(const std::string& path, const httplib::Headers& headers) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (true) {
      httplib::Result r = admin_->http().Get(path, headers);
      if ((r && r->status != 502) || std::chrono::steady_clock::now() > deadline) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  fs::path dir_;
  std::unique_ptr<UpProcess> up_;
  std::unique_ptr<RestClient> admin_;
  std::string alice_, bob_;
};

TEST_F(InteractiveTest, HttpThroughTheProxyOnlyForItsTenant) {
  const int64_t id = SubmitEcho("echo");
  admin_->WaitState(id, "running");
  const std::string base = Base(id);
  httplib::Result page = GetWhenUp(base + "lab?x=1", admin_->Auth(alice_));
  ASSERT_TRUE(page) << up_->Log();
  ASSERT_EQ(page->status, 200) << page->body << "\n" << up_->Log();
  EXPECT_NE(page->body.find("xpool echo task"), std::string::npos) << page->body;
  EXPECT_NE(page->body.find("<code id=\"path\">" + base + "lab?x=1</code>"), std::string::npos) << page->body;
  EXPECT_NE(page->body.find("<code id=\"base\">" + base + "</code>"), std::string::npos) << page->body;  // env
  httplib::Result post = admin_->http().Post(base + "echo", admin_->Auth(alice_), "posted body", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->body, "echo: posted body");
  // Bob cannot reach it, nor tell it from a missing job; nobody without a token can.
  httplib::Result other = admin_->http().Get(base, admin_->Auth(bob_));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404) << other->body;
  EXPECT_NE(other->body.find("job " + std::to_string(id) + " not found"), std::string::npos) << other->body;
  httplib::Result none = admin_->http().Get(base);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401) << none->body;
  EXPECT_EQ(admin_->Post("/api/v1/jobs/" + std::to_string(id) + "/proxy-session", "", bob_)->status, 404);
  // The browser's way in: a one-time link, then a cookie.
  httplib::Result link = admin_->Post("/api/v1/jobs/" + std::to_string(id) + "/proxy-session", "", alice_);
  ASSERT_TRUE(link);
  ASSERT_EQ(link->status, 201) << link->body;
  const std::string url = Json::parse(link->body)["url"];
  httplib::Result redeemed = admin_->http().Get(url);
  ASSERT_TRUE(redeemed);
  ASSERT_EQ(redeemed->status, 303) << redeemed->body;
  EXPECT_EQ(redeemed->get_header_value("Location"), base);
  const std::string cookie = redeemed->get_header_value("Set-Cookie");
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos) << cookie;
  httplib::Result with_cookie = admin_->http().Get(base, {{"Cookie", cookie.substr(0, cookie.find(';'))}});
  ASSERT_TRUE(with_cookie);
  EXPECT_EQ(with_cookie->status, 200) << with_cookie->body;
  EXPECT_EQ(admin_->http().Get(url)->status, 401);  // the link works once
  admin_->Post("/api/v1/jobs/" + std::to_string(id) + "/cancel");
}

TEST_F(InteractiveTest, WebSocketEchoThroughTheProxy) {
  const int64_t id = SubmitEcho("ws-echo");
  admin_->WaitState(id, "running");
  ASSERT_TRUE(GetWhenUp(Base(id), admin_->Auth(alice_)));  // the task listens
  const int fd = Connect(up_->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "GET " + Base(id) + "ws HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + alice_ +
                              "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"));
  std::string rest;
  const std::string head = ReadHead(fd, &rest);
  ASSERT_EQ(head.rfind("HTTP/1.1 101", 0), 0u) << head << "\n" << up_->Log();
  // RFC 6455's own example key and answer: the task's handshake came through unchanged.
  EXPECT_NE(head.find("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), std::string::npos) << head;
  for (const std::string& message : {std::string("hello through the proxy"), std::string(1000, 'x')}) {
    ASSERT_TRUE(SendAll(fd, ClientFrame(1, message)));
    auto [opcode, payload] = ReadFrame(fd, &rest);
    EXPECT_EQ(opcode, 1);
    EXPECT_EQ(payload, message);
  }
  ASSERT_TRUE(SendAll(fd, ClientFrame(8, "")));
  EXPECT_EQ(ReadFrame(fd, &rest).first, 8);  // the close is echoed
  ::close(fd);
  // Without a token the upgrade is refused before it reaches the task.
  const int anon = Connect(up_->port());
  ASSERT_TRUE(SendAll(anon, "GET " + Base(id) +
                                "ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                                "Connection: Upgrade\r\nSec-WebSocket-Key: a2V5\r\n\r\n"));
  EXPECT_EQ(ReadHead(anon, &rest).rfind("HTTP/1.1 401", 0), 0u);
  ::close(anon);
  admin_->Post("/api/v1/jobs/" + std::to_string(id) + "/cancel");
}

TEST_F(InteractiveTest, TtlAndIdleTimeoutEndTheJob) {
  const int64_t ttl = SubmitEcho("ttl", {{"ttl", "12s"}, {"idle-timeout", 0}});
  const int64_t idle = SubmitEcho("idle", {{"ttl", "8h"}, {"idle-timeout", "10s"}});
  admin_->WaitState(ttl, "running");
  admin_->WaitState(idle, "running");
  admin_->WaitState(ttl, "cancelled", 40);
  admin_->WaitState(idle, "cancelled", 40);
  EXPECT_NE(admin_->Events(ttl).find("interactive ttl 12s reached"), std::string::npos) << admin_->Events(ttl);
  EXPECT_NE(admin_->Events(idle).find("idle for 10s (no traffic through the proxy)"), std::string::npos)
      << admin_->Events(idle);
}

TEST_F(InteractiveTest, JupyterNotebookBehindTheProxy) {
  if (!fs::exists(kJupyter)) {
    GTEST_SKIP() << kJupyter << " is not installed (apt-get install jupyter-notebook): the echo task stands in";
  }
  const std::string command =
      "export HOME=$PWD JUPYTER_RUNTIME_DIR=$PWD/rt; exec " + std::string(kJupyter) +
      " --no-browser --ip=0.0.0.0 --port=$XPOOL_INTERACTIVE_PORT --NotebookApp.base_url=$XPOOL_PROXY_BASE"
      " --NotebookApp.token='' --NotebookApp.password='' --NotebookApp.allow_remote_access=True";
  const int64_t id = SubmitInteractive("jupyter", command);
  admin_->WaitState(id, "running");
  const std::string base = Base(id);
  httplib::Result api = GetWhenUp(base + "api", admin_->Auth(alice_));
  ASSERT_TRUE(api) << up_->Log();
  ASSERT_EQ(api->status, 200) << api->body << "\n" << up_->Log();
  EXPECT_TRUE(Json::parse(api->body, nullptr, false).contains("version")) << api->body;
  // Jupyter's XSRF check: the _xsrf cookie its tree page sets, sent back as cookie and header.
  httplib::Result tree = admin_->http().Get(base + "tree", admin_->Auth(alice_));
  ASSERT_TRUE(tree);
  std::string xsrf;
  for (const auto& [k, v] : tree->headers) {  // names as the proxy passes them on: lower-cased
    if (EqualsIgnoreCase(k, "set-cookie") && v.rfind("_xsrf=", 0) == 0) xsrf = v.substr(6, v.find(';') - 6);
  }
  ASSERT_FALSE(xsrf.empty()) << tree->status << " " << tree->body.substr(0, 300);
  httplib::Headers h = admin_->Auth(alice_);
  h.emplace("Cookie", "_xsrf=" + xsrf);
  h.emplace("X-XSRFToken", xsrf);
  httplib::Result kernel = admin_->http().Post(base + "api/kernels", h, "{}", "application/json");
  ASSERT_TRUE(kernel);
  ASSERT_EQ(kernel->status, 201) << kernel->body;
  const std::string kernel_id = Json::parse(kernel->body)["id"];
  const int fd = Connect(up_->port());
  ASSERT_TRUE(SendAll(fd, "GET " + base + "api/kernels/" + kernel_id +
                              "/channels HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(up_->port()) +
                              "\r\nAuthorization: Bearer " + alice_ + "\r\nCookie: _xsrf=" + xsrf +
                              "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
                              "dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"));
  std::string rest;
  const std::string head = ReadHead(fd, &rest);
  EXPECT_EQ(head.rfind("HTTP/1.1 101", 0), 0u) << head;
  ::close(fd);
  admin_->Post("/api/v1/jobs/" + std::to_string(id) + "/cancel");
}

}  // namespace
