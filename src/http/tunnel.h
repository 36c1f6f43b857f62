#pragma once
// TunnelPool: byte pipes between pairs of sockets — a client connection the HttpServer gave up after a protocol
// switch (HttpResponse::take_over: a WebSocket through the server's interactive-task proxy) and the upstream
// connection it was proxied to. One thread with its own epoll moves the bytes both ways without blocking, so a
// slow or stalled peer costs its own buffers and never another tunnel's progress, an HTTP worker or the
// HttpServer's event loop.
//
// Bounds: at most max_tunnels at once (Add refuses more); each direction buffers at most buffer_bytes (reading
// its source pauses until the other side has taken them); a tunnel with no byte moved either way for
// idle_timeout_ms is closed. When one side ends its output (EOF), the other's output is shut down once the
// buffered bytes are written (half-close kept); when both have, or on an error, both sockets are closed.
//
// Owns every socket given to Add. Thread-safe: Add, open() and Stop() from any thread; on_activity runs on the
// pool's thread (keep it quick), at most once per activity_interval_ms per tunnel.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"

namespace xpool::http {

struct TunnelOptions {
  int max_tunnels = 256;
  size_t buffer_bytes = 256 << 10;      // per direction
  int64_t idle_timeout_ms = 3'600'000;  // no byte either way
  int64_t activity_interval_ms = 1000;  // on_activity at most this often per tunnel
};

class TunnelPool {
 public:
  using Activity = std::function<void()>;

  explicit TunnelPool(TunnelOptions options = {});
  ~TunnelPool();  // Stop()
  TunnelPool(const TunnelPool&) = delete;
  TunnelPool& operator=(const TunnelPool&) = delete;

  // Pipes `a` and `b` (made non-blocking here) until both ends finish, an error or the idle timeout. to_b and
  // to_a are bytes already read from the other side, sent first. Takes both sockets in every case: when the pool
  // is full or stopped they are closed and the answer is ResourceExhausted / Unavailable.
  Status Add(int a, std::string to_b, int b, std::string to_a, Activity on_activity = {});
  // Tunnels open now (and added but not yet picked up by the thread).
  int open() const;
  bool full() const { return open() >= options_.max_tunnels; }
  // Closes every tunnel and joins the thread; Add refuses from then on.
  void Stop();

 private:
  struct Impl;
  const TunnelOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpool::http
