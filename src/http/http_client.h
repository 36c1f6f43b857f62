#pragma once
// SendHttpRequest: one blocking HTTP/1.1 exchange over plain TCP ("http://host:port"), for the CLI and the
// agent's HTTP fallback. Each call opens a connection, sends the request with `Connection: close`, and reads the
// whole answer (Content-Length, chunked, or up to the server's close). No TLS: the server speaks plain HTTP
// (docs/api.md). Links nothing beyond libc, so the client binary starts fast (docs/PERFORMANCE.md).
// Free functions, thread-safe (no shared state).
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "http/http_message.h"

namespace xpool::http {

struct ClientOptions {
  int64_t connect_timeout_ms = 5000;
  int64_t io_timeout_ms = 30000;             // the longest wait for the socket to accept or deliver bytes
  int64_t max_response_bytes = 256ll << 20;  // a longer answer is an error, not an allocation
};

// Where a "http://host[:port]" URL points. A trailing '/' is allowed; a path, a query, "https://" or a
// missing host is InvalidArgument naming the URL.
struct ServerAddress {
  std::string host;  // without the brackets of an IPv6 literal
  int port = 80;
  std::string host_header;  // "host:port" as sent in the Host header
};
Result<ServerAddress> ParseServerUrl(std::string_view url);

// Sends request.method request.target (with request.headers and request.body; Host, Content-Length and
// Connection are added) to `url` and returns the answer: status, content_type, the other headers (names
// lower-cased) and the body. Unavailable when the server cannot be reached, the connection fails midway
// ("Connection refused", "connecting timed out after 5000 ms", ...) or the answer is not HTTP/1.x;
// InvalidArgument for a bad URL; ResourceExhausted for an answer over max_response_bytes.
Result<HttpResponse> SendHttpRequest(std::string_view url, const HttpRequest& request,
                                     const ClientOptions& options = {});

// What SendUpgradeRequest got back. A 101 answer leaves the connection open for the new protocol.
struct UpgradeResult {
  HttpResponse response;  // the answer; for a 101 its head only
  int fd = -1;            // a 101: the connection (non-blocking), owned by the caller from here on; else -1
  std::string unread;     // a 101: what the server sent after the head (the new protocol's first bytes)
};

// Like SendHttpRequest, for a protocol switch (a WebSocket's "Connection: Upgrade", "Upgrade: websocket"): the
// request goes with its own Connection header and a 101 answer ends at its head. A Host header among
// request.headers is sent instead of the URL's (for SendHttpRequest too).
Result<UpgradeResult> SendUpgradeRequest(std::string_view url, const HttpRequest& request,
                                         const ClientOptions& options = {});

// `text` percent-encoded for a query value or a path segment: every byte but A-Z a-z 0-9 - . _ ~ as %XX.
std::string PercentEncode(std::string_view text);

}  // namespace xpool::http
