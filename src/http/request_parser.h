#pragma once
// RequestParser: an incremental HTTP/1.1 request parser (RFC 9112) with hard limits, fed the bytes of one
// connection as they arrive. It never blocks and never reads past the request it parses, so pipelined requests
// stay in the caller's buffer for the next round.
//
//   RequestParser parser(limits);
//   ParseState s = parser.Parse(buffer);          // buffer: the connection's unread bytes, from this request on
//   kNeedHead / kNeedBody: read more and call again with the grown buffer (same start)
//   kComplete: parser.request() is the request; drop parser.consumed() bytes of the buffer; parser.Reset()
//   kError: answer parser.error_status() (400, 413, 414, 431, 501, 505) with parser.error_message(), then close
//
// Framing: Content-Length, or "Transfer-Encoding: chunked" (decoded; chunk extensions and trailers are read
// and dropped). A request with neither has no body (RFC 9112 section 6.3): it is complete at the end of its
// head, so a client that sends a body without saying how long never holds anything. Both headers together,
// differing Content-Lengths, other transfer codings and obsolete line folding are refused (request smuggling).
// Owned by one connection; not thread-safe.
#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "http/http_message.h"

namespace xpool::http {

struct HttpLimits {
  size_t max_header_bytes = 32 << 10;  // request line + headers (+ a chunked body's trailers); 431 past it
  size_t max_body_bytes = 1 << 20;     // the decoded body; 413 past it (before it is read when its length is known)
};

enum class ParseState { kNeedHead, kNeedBody, kComplete, kError };

class RequestParser {
 public:
  explicit RequestParser(HttpLimits limits) : limits_(limits) {}

  // Parses `buffer` (all unread bytes of the connection, starting at this request's first byte; each call sees
  // the previous call's bytes again plus what arrived since).
  ParseState Parse(std::string_view buffer);

  // After kNeedBody or kComplete: the request (its head; its body once kComplete).
  HttpRequest& request() { return request_; }
  // After kComplete: the request's length in the buffer.
  size_t consumed() const { return pos_; }
  // After kNeedBody: the body's size as far as known now (its Content-Length; a chunked body's size so far).
  size_t body_bytes_expected() const { return std::max(declared_, request_.body.size()); }
  // After kError.
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

  // Ready for the next request on the connection.
  void Reset();

 private:
  enum class Phase { kHead, kLengthBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kDone, kError };

  ParseState Fail(int status, std::string message);
  bool Refuse(int status, std::string message);  // Fail, for the steps that answer bool
  ParseState ParseHead(std::string_view buffer);
  bool ParseRequestLine(std::string_view line);
  bool ParseHeaderLine(std::string_view line);
  bool DecideFraming();
  ParseState ParseChunked(std::string_view buffer);
  // The next line of `buffer` at pos_ (without its CR LF or LF); false when it is not complete yet.
  bool NextLine(std::string_view buffer, std::string_view* line);

  HttpLimits limits_;
  Phase phase_ = Phase::kHead;
  HttpRequest request_;
  size_t pos_ = 0;        // bytes of the buffer parsed so far
  size_t scan_ = 0;       // the head: where the search for its end resumes
  size_t remaining_ = 0;  // kLengthBody / kChunkData: body bytes still to come
  size_t declared_ = 0;   // the Content-Length
  size_t trailer_bytes_ = 0;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace xpool::http
