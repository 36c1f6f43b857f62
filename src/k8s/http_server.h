#pragma once
// HttpServer: a small HTTP(S) server for the Kubernetes components (extender, webhook, metrics, health), over
// cpp-httplib, kept out of this header so includers do not pay for it.
//
//   HttpServer server;
//   server.Post("/filter", [&](std::string_view body) { return extender.Filter(body); });
//   Result<int> port = server.Start("0.0.0.0", 8888);   // 0 = any free port; with cert and key: HTTPS
//   ...
//   server.Stop();
// Handlers run on the server's worker threads, concurrently: they must be thread-safe. Register handlers before
// Start. Start/Stop from one thread.
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace xpool::k8s {

struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

class HttpServer {
 public:
  using Handler = std::function<HttpReply(std::string_view body)>;

  HttpServer();
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void Post(const std::string& path, Handler handler);
  void Get(const std::string& path, Handler handler);

  // Binds and serves in a background thread. Returns the bound port. Unavailable when the address cannot be bound
  // or the certificate cannot be loaded.
  Result<int> Start(const std::string& host, int port, const std::string& cert_file = "",
                    const std::string& key_file = "");
  void Stop();

  // TLS: every `interval_ms` (0: never) the certificate and key files are checked, and when they changed (a
  // rotated Secret) new connections are served with the new pair; a pair that does not load is reported and the
  // old one kept. Call before Start.
  void SetCertificateReload(int64_t interval_ms);
  // Loads the certificate and key files now (what the reload does). Unavailable when they do not load.
  Status ReloadCertificate();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Splits "host:port" / ":port" (host defaults to 0.0.0.0). InvalidArgument on anything else.
Status ParseListenAddress(std::string_view text, std::string* host, int* port);

}  // namespace xpool::k8s
