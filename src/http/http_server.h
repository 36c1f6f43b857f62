#pragma once
// HttpServer: an HTTP/1.1 server that slow or hostile clients cannot stall. One event-loop thread (epoll)
// accepts connections and reads, parses (RequestParser) and answers them without blocking; only *complete*
// requests go to a fixed pool of worker threads that run the handler. A connection costs a file descriptor and
// its buffers, never a thread, while it sends its request or waits between requests.
//
//   HttpServer server(options, [](HttpRequest& r) { return HttpResponse{200, "text/plain", {}, "hi"}; });
//   Result<int> port = server.Bind("127.0.0.1", 0);   // listening from here on
//   Status s = server.Serve();                         // returns after Stop()
//
// What a client sees (docs/api.md, "Connections and limits"):
// - Keep-alive by default (HTTP/1.1; HTTP/1.0 with "Connection: keep-alive"); "Connection: close" is honoured.
//   Pipelined requests are answered in order, one at a time; the next one is not read before the answer to the
//   previous one is written.
// - Deadlines: the request head must arrive within header_timeout of the connection's first byte (of its
//   accept, for the first request), the body within body_timeout after the head; a keep-alive connection idle
//   for idle_timeout is closed; an answer the client does not read for write_timeout is dropped with the
//   connection. A late head or body gets 408 and the connection is closed.
// - Limits: head over max_header_bytes: 431 (a request line alone over it: 414); a body over max_body_bytes:
//   413 before it is read when Content-Length says so. "Expect: 100-continue" gets "100 Continue" once the
//   head has passed these checks. Chunked bodies are decoded; a request without Content-Length or
//   Transfer-Encoding has no body.
// - Caps: past max_connections open connections, or max_connections_per_client from one address, a new
//   connection is answered 503 with "Retry-After" and closed; so is a request whose body would take the bodies
//   being received past max_buffered_body_bytes.
// - Protocol switches: an answer with HttpResponse::take_over set (a "101 Switching Protocols" for a WebSocket) is
//   written as it is, then the connection leaves the server (no longer counted against the caps or deadlines)
//   and its socket goes to take_over, on the event loop.
// - HEAD is answered as GET without the body. Errors the transport answers itself (400, 408, 413, 414, 431,
//   501, 503, 505) get the body ErrorResponder makes (plain text when none is given) and close the connection.
// No TLS. Thread-safe: Stop() and stats() from any thread; Bind and Serve from one thread, Bind first.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "http/http_message.h"
#include "http/request_parser.h"

namespace xpool::http {

struct HttpServerOptions {
  HttpLimits limits;
  int worker_threads = 16;                // run the handler; a request waits for a free one
  int max_connections = 10000;            // open at once (lowered to what RLIMIT_NOFILE allows, see Bind)
  int max_connections_per_client = 1024;  // open at once from one client address
  int64_t header_timeout_ms = 10'000;
  int64_t body_timeout_ms = 30'000;
  int64_t idle_timeout_ms = 30'000;   // a keep-alive connection between requests
  int64_t write_timeout_ms = 10'000;  // an answer that makes no progress this long is dropped
  int retry_after_s = 1;              // the Retry-After of a 503 past a cap
  // Request bodies being received, all connections together (each counted at its Content-Length, or as far as
  // it has come when chunked): a request whose body would go past it gets 503 and Retry-After. With the head
  // limit (a connection reads no more than that before its head is complete), this bounds the memory that
  // clients without a token can make the server hold.
  size_t max_buffered_body_bytes = 256 << 20;
};

// Counters since start (and connections open now), for metrics and tests. Read with relaxed loads.
struct HttpServerStats {
  std::atomic<int64_t> connections_open{0};
  std::atomic<int64_t> connections_accepted{0};
  std::atomic<int64_t> connections_refused{0};  // past a cap: 503 (or closed at once past the linger budget)
  std::atomic<int64_t> bodies_refused{0};       // past max_buffered_body_bytes: 503
  std::atomic<int64_t> requests{0};             // handed to the handler
  std::atomic<int64_t> bad_requests{0};         // answered by the transport: 400, 413, 414, 431, 501, 505
  std::atomic<int64_t> timeouts{0};             // head, body or write deadline missed (idle closes not counted)
  std::atomic<int64_t> taken_over{0};           // connections given to a handler's take_over (protocol switch)
};

class HttpServer {
 public:
  // Runs on a worker thread, many at once: must be thread-safe. An exception it throws becomes a 500.
  using Handler = std::function<HttpResponse(HttpRequest& request)>;
  // The answer for an error the transport reports itself (status, reason). Runs on the event loop (keep it quick)
  // and, for a handler's exception (500), on a worker: must be thread-safe.
  using ErrorResponder = std::function<HttpResponse(int status, const std::string& message)>;

  HttpServer(HttpServerOptions options, Handler handler, ErrorResponder errors = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Listens on host:port (port 0: any free port) and returns the port. Raises the soft RLIMIT_NOFILE to the
  // hard limit and lowers max_connections to fit it (effective_max_connections()). Unavailable when the address
  // cannot be bound; the message is "address already in use" for EADDRINUSE.
  Result<int> Bind(const std::string& host, int port);
  // Serves on the calling thread until Stop(); the workers are started here and joined before it returns.
  Status Serve();
  // Serve() returns soon after (requests being handled finish first; their answers are not sent).
  void Stop();

  int effective_max_connections() const;
  const HttpServerStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpool::http
