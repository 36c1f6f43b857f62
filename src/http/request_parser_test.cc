#include "http/request_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xpool::http {
namespace {

HttpLimits Small() {
  HttpLimits l;
  l.max_header_bytes = 256;
  l.max_body_bytes = 64;
  return l;
}

// Feeds `text` one byte at a time (every prefix is seen, as over a slow connection) and returns the last state.
ParseState FeedByByte(RequestParser& p, const std::string& text) {
  ParseState s = ParseState::kNeedHead;
  for (size_t i = 1; i <= text.size(); ++i) {
    s = p.Parse(std::string_view(text).substr(0, i));
    if (s == ParseState::kComplete || s == ParseState::kError) return s;
  }
  return s;
}

TEST(RequestParserTest, ParsesAGetAtOnceAndByteByByte) {
  const std::string text =
      "GET /api/v1/jobs%2Fx?state=running&name=a+b HTTP/1.1\r\nHost: x\r\nAuthorization:  Bearer t \r\n\r\n";
  for (bool by_byte : {false, true}) {
    SCOPED_TRACE(by_byte ? "byte by byte" : "at once");
    RequestParser p(Small());
    ASSERT_EQ(by_byte ? FeedByByte(p, text) : p.Parse(text), ParseState::kComplete);
    EXPECT_EQ(p.consumed(), text.size());
    const HttpRequest& r = p.request();
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.path, "/api/v1/jobs/x");
    EXPECT_EQ(r.query, "state=running&name=a+b");
    EXPECT_EQ(r.Header("authorization"), "Bearer t");
    EXPECT_EQ(r.Header("HOST"), "x");
    EXPECT_TRUE(r.keep_alive);
    EXPECT_TRUE(r.body.empty());
  }
}

TEST(RequestParserTest, StopsAtTheEndOfEachPipelinedRequest) {
  const std::string first = "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
  const std::string second = "GET /b HTTP/1.1\r\n\r\n";
  std::string buffer = first + second + "GET /c HT";
  RequestParser p(Small());
  ASSERT_EQ(p.Parse(buffer), ParseState::kComplete);
  EXPECT_EQ(p.request().body, "hello");
  EXPECT_EQ(p.consumed(), first.size());
  buffer.erase(0, p.consumed());
  p.Reset();
  ASSERT_EQ(p.Parse(buffer), ParseState::kComplete);
  EXPECT_EQ(p.request().path, "/b");
  buffer.erase(0, p.consumed());
  p.Reset();
  EXPECT_EQ(p.Parse(buffer), ParseState::kNeedHead);
}

TEST(RequestParserTest, DecodesChunkedBodiesWithExtensionsAndTrailers) {
  const std::string text =
      "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;name=v\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nGET /next HTTP/1.1\r\n\r\n";
  for (bool by_byte : {false, true}) {
    SCOPED_TRACE(by_byte ? "byte by byte" : "at once");
    RequestParser p(Small());
    ASSERT_EQ(by_byte ? FeedByByte(p, text) : p.Parse(text), ParseState::kComplete);
    EXPECT_EQ(p.request().body, "hello world");
    EXPECT_EQ(text.substr(p.consumed()), "GET /next HTTP/1.1\r\n\r\n");
  }
}

TEST(RequestParserTest, ARequestWithoutLengthHasNoBody) {
  RequestParser p(Small());
  ASSERT_EQ(p.Parse("POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n{\"name\""), ParseState::kComplete);
  EXPECT_TRUE(p.request().body.empty());
  EXPECT_EQ(p.consumed(), std::string("POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n").size());
}

TEST(RequestParserTest, ReportsTheHeadBeforeTheBodyAndExpectContinue) {
  RequestParser p(Small());
  const std::string head = "PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n";
  ASSERT_EQ(p.Parse(head), ParseState::kNeedBody);
  EXPECT_TRUE(p.request().expect_continue);
  ASSERT_EQ(p.Parse(head + "ab"), ParseState::kNeedBody);
  ASSERT_EQ(p.Parse(head + "abc"), ParseState::kComplete);
  EXPECT_EQ(p.request().body, "abc");
}

TEST(RequestParserTest, KeepAliveFollowsTheVersionAndConnectionHeader) {
  struct Row {
    std::string text;
    bool keep_alive;
  };
  const std::vector<Row> rows = {
      {"GET / HTTP/1.1\r\n\r\n", true},
      {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nConnection: Upgrade, Close\r\n\r\n", false},
      {"GET / HTTP/1.0\r\n\r\n", false},
      {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    RequestParser p(Small());
    ASSERT_EQ(p.Parse(row.text), ParseState::kComplete);
    EXPECT_EQ(p.request().keep_alive, row.keep_alive);
  }
}

TEST(RequestParserTest, RefusesBadOrOversizedRequestsWithTheirStatus) {
  struct Row {
    std::string name;
    std::string text;
    int status;
  };
  const std::string long_line = "GET /" + std::string(300, 'a') + " HTTP/1.1\r\n\r\n";
  const std::vector<Row> rows = {
      {"request line over the limit", long_line, 414},
      {"headers over the limit", "GET / HTTP/1.1\r\nX: " + std::string(300, 'a') + "\r\n\r\n", 431},
      {"headers over the limit, not ended", "GET / HTTP/1.1\r\nX: " + std::string(300, 'a'), 431},
      {"Content-Length over the body limit", "POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n", 413},
      {"chunked over the body limit", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n", 413},
      {"chunks adding up over the limit",
       "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n" + std::string(32, 'a') + "\r\n21\r\n", 413},
      {"both lengths", "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"differing lengths", "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400},
      {"bad length", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"other coding", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"line folding", "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400},
      {"space before colon", "GET / HTTP/1.1\r\nX : a\r\n\r\n", 400},
      {"bad version", "GET / HTTP/2.0\r\n\r\n", 505},
      {"not HTTP", "GET / FTP/1.0\r\n\r\n", 400},
      {"relative target", "GET x HTTP/1.1\r\n\r\n", 400},
      {"bad chunk size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"chunk longer than its size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", 400},
      {"unknown expectation", "GET / HTTP/1.1\r\nExpect: magic\r\n\r\n", 417},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    RequestParser p(Small());
    ASSERT_EQ(p.Parse(row.text), ParseState::kError);
    EXPECT_EQ(p.error_status(), row.status) << p.error_message();
    EXPECT_FALSE(p.error_message().empty());
  }
}

TEST(RequestParserTest, AbsoluteFormAndLeadingEmptyLines) {
  RequestParser p(Small());
  ASSERT_EQ(p.Parse("\r\nGET http://host:1/healthz?x=1 HTTP/1.1\r\n\r\n"), ParseState::kComplete);
  EXPECT_EQ(p.request().path, "/healthz");
  EXPECT_EQ(p.request().query, "x=1");
}

}  // namespace
}  // namespace xpool::http
