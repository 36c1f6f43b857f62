#pragma once
// HttpRequest and HttpResponse: one HTTP/1.1 exchange as the transport (http_server.h) hands it to a handler and
// takes the answer back. Plain values: no sockets, no library types, so includers pay for nothing heavy.
// Not thread-safe to mutate concurrently; each request is owned by the one worker running its handler.
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/text.h"

namespace xpool::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;      // as sent ("GET", "POST", ...); a HEAD request reaches handlers as "GET" with head = true
  std::string target;      // the request target as sent ("/api/v1/jobs?state=running")
  std::string path;        // the target's path, percent-decoded ('+' stays '+')
  std::string query;       // the raw query string after '?', "" when none (ParseQuery decodes it)
  HeaderList headers;      // in the order sent; names lower-cased, values without surrounding blanks
  std::string body;        // the whole body (a chunked body already decoded)
  int version_minor = 1;   // HTTP/1.<version_minor>
  bool keep_alive = true;  // false after "Connection: close" or an HTTP/1.0 request without keep-alive
  bool expect_continue = false;  // "Expect: 100-continue" was sent
  bool head = false;             // the client asked HEAD: the answer's body is not sent
  std::string peer;              // the client's address without the port ("127.0.0.1", "::1")

  // The first header named `name` (any case), "" when absent.
  std::string_view Header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (EqualsIgnoreCase(k, name)) return v;
    }
    return {};
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain";
  HeaderList headers;  // extra headers; the transport writes Content-Type, Content-Length and Connection itself
  std::string body;
  bool close = false;  // close the connection after this answer
  // A protocol switch ("101 Switching Protocols", a WebSocket): when set, the answer is written as its status
  // line and `headers` only (Connection and Upgrade included; no Content-Type or Content-Length), and then the
  // transport gives the connection up: it calls take_over with the socket (non-blocking; the callee owns it
  // from then on) and the bytes the client sent after the request. Called on the transport's event loop: it
  // must not block. Not called when the client is gone before the answer is written (the function is then
  // destroyed unused: whatever it owns must clean up in its destructor).
  std::function<void(int fd, std::string unread)> take_over;
};

// The standard reason phrase of `status` ("Not Found"); "Unknown" for codes it does not know.
std::string_view ReasonPhrase(int status);

// `text` with %XX sequences decoded; a '%' not followed by two hex digits stays as it is. With `plus_is_space`
// (query strings), '+' becomes ' '.
std::string PercentDecode(std::string_view text, bool plus_is_space);

// "a=1&b=x%20y&c" -> {a: 1}, {b: "x y"}, {c: ""}, in order (repeated names kept).
std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view query);

}  // namespace xpool::http
