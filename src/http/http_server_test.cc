// HttpServer through real sockets on 127.0.0.1: keep-alive, pipelining, HEAD, 100-continue, limits, deadlines,
// connection caps and a client that stops reading. Deadlines are set short (hundreds of ms) so that the tests
// wait for them quickly; every wait has a bound several times longer, and nothing asserts a duration.
#include "http/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "http/testing/raw_client.h"

namespace xpool::http {
namespace {

using testing::RawClient;
using testing::RawResponse;

// 24 MB (more than loopback socket buffers hold, so it goes out in many writes), every byte depending on its
// offset: a body sent from a wrong place does not compare equal.
std::string PatternBody() {
  std::string body(24 << 20, ' ');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
  return body;
}

HttpResponse Route(HttpRequest& r) {
  HttpResponse out;
  if (r.path == "/big") {
    out.body.assign(16 << 20, 'x');
  } else if (r.path == "/pattern") {
    out.body = PatternBody();
  } else if (r.path == "/throw") {
    throw std::runtime_error("boom");
  } else {
    out.body = r.method + " " + r.path + " q=" + r.query + " body=" + r.body;
    out.headers.emplace_back("X-Peer", r.peer);
  }
  return out;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions options = {}) {
    options.worker_threads = 4;
    server_ = std::make_unique<HttpServer>(options, Route, [](int status, const std::string& message) {
      HttpResponse r;
      r.status = status;
      r.content_type = "application/json";
      r.body = "{\"error\":\"" + message + "\"}";
      return r;
    });
    Result<int> port = server_->Bind("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
    thread_ = std::thread([this] { served_ = server_->Serve(); });
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
    EXPECT_TRUE(served_.ok()) << served_.ToString();
  }
  static std::string Get(const std::string& path, const std::string& extra = "") {
    return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
  }
  // Waits (bounded) until `done()`; false if it never happened.
  template <typename F>
  static bool Eventually(F done, int ms = 10000) {
    for (int i = 0; i < ms / 10; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  }

  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  Status served_;
  int port_ = 0;
};

TEST_F(HttpServerTest, KeepAliveAnswersManyRequestsOnOneConnection) {
  Start();
  RawClient c(port_);
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(c.Send(Get("/n/" + std::to_string(i) + "?a=b")));
    auto r = c.Read();
    ASSERT_TRUE(r) << "request " << i;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "GET /n/" + std::to_string(i) + " q=a=b body=");
    EXPECT_EQ(r->Header("Connection"), "");
    EXPECT_EQ(r->Header("X-Peer"), "127.0.0.1");
  }
  EXPECT_EQ(server_->stats().connections_accepted.load(), 1);
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  Start();
  RawClient c(port_);
  std::string batch;
  for (int i = 0; i < 10; ++i)
    batch += "POST /p" + std::to_string(i) + " HTTP/1.1\r\nContent-Length: 1\r\n\r\n" + std::to_string(i);
  ASSERT_TRUE(c.Send(batch + Get("/last", "Connection: close\r\n")));
  for (int i = 0; i < 10; ++i) {
    auto r = c.Read();
    ASSERT_TRUE(r) << "answer " << i;
    EXPECT_EQ(r->body, "POST /p" + std::to_string(i) + " q= body=" + std::to_string(i));
  }
  auto last = c.Read();
  ASSERT_TRUE(last);
  EXPECT_EQ(last->body, "GET /last q= body=");
  EXPECT_EQ(last->Header("Connection"), "close");
  EXPECT_TRUE(c.WaitClosed());
}

TEST_F(HttpServerTest, HeadAnswersGetsHeadersWithoutTheBody) {
  Start();
  RawClient c(port_);
  ASSERT_TRUE(c.Send("HEAD /h HTTP/1.1\r\n\r\n" + Get("/after")));
  auto head = c.Read(5000, /*head_only=*/true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->Header("Content-Length"), std::to_string(std::string("GET /h q= body=").size()));
  auto after = c.Read();  // the next answer starts right after the head: no body was sent
  ASSERT_TRUE(after);
  EXPECT_EQ(after->body, "GET /after q= body=");
}

TEST_F(HttpServerTest, ALargeBodyArrivesWholeInPiecesAndTheNextAnswerFollowsIt) {
  Start();
  RawClient c(port_, /*receive_buffer=*/32 * 1024);
  ASSERT_TRUE(c.Send(Get("/pattern") + "HEAD /pattern HTTP/1.1\r\n\r\n" + Get("/after")));
  auto big = c.Read(20000);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 200);
  EXPECT_EQ(big->Header("Content-Length"), std::to_string(24 << 20));
  EXPECT_TRUE(big->body == PatternBody()) << "the body differs from what the handler answered";
  auto head = c.Read(5000, /*head_only=*/true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->Header("Content-Length"), std::to_string(24 << 20));
  auto after = c.Read();  // right after the HEAD answer's head: its body was not sent
  ASSERT_TRUE(after);
  EXPECT_EQ(after->body, "GET /after q= body=");
}

TEST_F(HttpServerTest, ExpectContinueGetsContinueThenTheAnswer) {
  Start();
  RawClient c(port_);
  ASSERT_TRUE(c.Send("POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"));
  auto cont = c.Read();
  ASSERT_TRUE(cont);
  EXPECT_EQ(cont->status, 100);
  ASSERT_TRUE(c.Send("data"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "POST /e q= body=data");
  // Over the body limit: refused before the body is sent, no 100.
  RawClient big(port_);
  ASSERT_TRUE(big.Send("POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 99999999\r\n\r\n"));
  auto refused = big.Read();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 413);
}

TEST_F(HttpServerTest, ChunkedBodiesAreDecoded) {
  Start();
  RawClient c(port_);
  ASSERT_TRUE(c.Send("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"));
  ASSERT_TRUE(c.Send("2\r\nde\r\n0\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "POST /c q= body=abcde");
}

TEST_F(HttpServerTest, PostWithoutLengthIsAnsweredAtOnceWithAnEmptyBody) {
  HttpServerOptions o;
  o.header_timeout_ms = o.body_timeout_ms = 60'000;  // an answer within Read's 5 s cannot be a timeout's
  Start(o);
  RawClient c(port_);
  ASSERT_TRUE(c.Send("POST /nolength HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "POST /nolength q= body=");
}

TEST_F(HttpServerTest, OversizedHeadsAndBodiesAreRefusedAndClosed) {
  HttpServerOptions o;
  o.limits.max_header_bytes = 1024;
  o.limits.max_body_bytes = 100;
  Start(o);
  struct Row {
    std::string name, request;
    int status;
  };
  const std::vector<Row> rows = {
      {"headers", "GET / HTTP/1.1\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n", 431},
      {"request line", "GET /" + std::string(2000, 'a') + " HTTP/1.1\r\n\r\n", 414},
      {"body by length", "POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413},
      {"chunked body", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n", 413},
      {"garbage", "\x16\x03\x01 hello\r\n\r\n", 400},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    RawClient c(port_);
    ASSERT_TRUE(c.Send(row.request));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, row.status);
    EXPECT_EQ(r->Header("Content-Type"), "application/json");
    EXPECT_EQ(r->Header("Connection"), "close");
    EXPECT_TRUE(c.WaitClosed());
  }
  EXPECT_EQ(server_->stats().bad_requests.load(), static_cast<int64_t>(rows.size()));
}

TEST_F(HttpServerTest, ALateHeadGets408AndAnIdleConnectionIsClosed) {
  HttpServerOptions o;
  o.header_timeout_ms = 300;
  o.idle_timeout_ms = 300;
  Start(o);
  RawClient slow(port_);
  ASSERT_TRUE(slow.Send("GET /slow HTTP/1.1\r\nX-A: 1\r\n"));  // never finished
  auto r = slow.Read(10000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 408);
  EXPECT_TRUE(slow.WaitClosed(10000));

  RawClient idle(port_);
  ASSERT_TRUE(idle.Send(Get("/once")));
  ASSERT_TRUE(idle.Read());
  EXPECT_TRUE(idle.WaitClosed(10000));  // idle after its answer

  RawClient silent(port_);  // connects and never sends a byte: closed without an answer
  EXPECT_TRUE(silent.WaitClosed(10000));
  EXPECT_GE(server_->stats().timeouts.load(), 2);
}

TEST_F(HttpServerTest, PastTheCapsNewConnectionsGet503WithRetryAfter) {
  HttpServerOptions o;
  o.max_connections_per_client = 4;
  Start(o);
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<RawClient>(port_));
    ASSERT_TRUE(held.back()->Send(Get("/held")));
    ASSERT_TRUE(held.back()->Read());  // accepted and answered: it counts now
  }
  RawClient extra(port_);
  auto refused = extra.Read();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->Header("Retry-After"), "1");
  EXPECT_NE(refused->body.find("too many connections from 127.0.0.1"), std::string::npos) << refused->body;
  EXPECT_TRUE(extra.WaitClosed());
  // The held connections keep working, and a freed slot is taken again.
  ASSERT_TRUE(held[0]->Send(Get("/still")));
  ASSERT_TRUE(held[0]->Read());
  held.pop_back();
  EXPECT_TRUE(Eventually([&] {
    RawClient again(port_);
    auto r = again.Send(Get("/again")) ? again.Read() : std::nullopt;
    return r && r->status == 200;
  }));
}

TEST_F(HttpServerTest, PastTheTotalCapNewConnectionsGet503) {
  HttpServerOptions o;
  o.max_connections = 3;
  Start(o);
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<RawClient>(port_));
    ASSERT_TRUE(held.back()->Send(Get("/held")));
    ASSERT_TRUE(held.back()->Read());
  }
  RawClient extra(port_);
  auto refused = extra.Read();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_NE(refused->body.find("too many connections to the server"), std::string::npos) << refused->body;
  EXPECT_GE(server_->stats().connections_refused.load(), 1);
}

TEST_F(HttpServerTest, BodiesPastTheBufferBudgetGet503UntilOthersFinish) {
  HttpServerOptions o;
  o.max_buffered_body_bytes = 1000;
  Start(o);
  const std::string head = "POST /b HTTP/1.1\r\nContent-Length: 800\r\n\r\n";
  RawClient first(port_);
  // 800 bytes counted once the head is read; "100 Continue" says it was.
  ASSERT_TRUE(first.Send("POST /b HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 800\r\n\r\n"));
  auto cont = first.Read();
  ASSERT_TRUE(cont);
  ASSERT_EQ(cont->status, 100);
  ASSERT_TRUE(first.Send(std::string(100, 'a')));
  RawClient second(port_);
  ASSERT_TRUE(second.Send(head));
  auto refused = second.Read();
  ASSERT_TRUE(refused) << "no answer: the second body was accepted past the budget";
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->Header("Retry-After"), "1");
  EXPECT_EQ(server_->stats().bodies_refused.load(), 1);
  ASSERT_TRUE(first.Send(std::string(700, 'a')));
  auto done = first.Read();
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, 200);
  RawClient third(port_);  // the first body was handed over: its share is free again
  ASSERT_TRUE(third.Send(head + std::string(800, 'c')));
  auto r = third.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, AClientThatStopsReadingIsDroppedAndStallsNoOne) {
  HttpServerOptions o;
  o.write_timeout_ms = 300;
  Start(o);
  RawClient stuck(port_, /*receive_buffer=*/4096);
  ASSERT_TRUE(stuck.Send(Get("/big")));  // 16 MiB it never reads
  RawClient other(port_);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(other.Send(Get("/other")));
    auto r = other.Read();
    ASSERT_TRUE(r) << "request " << i << " while a client does not read";
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_TRUE(Eventually([&] { return server_->stats().timeouts.load() >= 1; }));
  EXPECT_TRUE(stuck.WaitClosed(10000));
}

TEST_F(HttpServerTest, AHandlerExceptionIsA500AndTheServerGoesOn) {
  Start();
  RawClient c(port_);
  ASSERT_TRUE(c.Send(Get("/throw")));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  ASSERT_TRUE(c.Send(Get("/fine")));
  auto fine = c.Read();
  ASSERT_TRUE(fine);
  EXPECT_EQ(fine->status, 200);
}

TEST_F(HttpServerTest, HttpOneZeroClosesUnlessKeepAlive) {
  Start();
  RawClient once(port_);
  ASSERT_TRUE(once.Send("GET /old HTTP/1.0\r\n\r\n"));
  auto r = once.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->Header("Connection"), "close");
  EXPECT_TRUE(once.WaitClosed());
  RawClient kept(port_);
  ASSERT_TRUE(kept.Send("GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  auto k = kept.Read();
  ASSERT_TRUE(k);
  EXPECT_EQ(k->Header("Connection"), "keep-alive");
  ASSERT_TRUE(kept.Send("GET /again HTTP/1.0\r\n\r\n"));
  EXPECT_TRUE(kept.Read());
}

TEST(HttpServerBindTest, StopBeforeServeReturnsAndAPortInUseIsNamed) {
  HttpServer first({}, Route);
  Result<int> port = first.Bind("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  HttpServer second({}, Route);
  Result<int> taken = second.Bind("127.0.0.1", *port);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.status().message(), "address already in use");
  first.Stop();
  EXPECT_TRUE(first.Serve().ok());
  EXPECT_GT(first.effective_max_connections(), 0);
}

}  // namespace
}  // namespace xpool::http
