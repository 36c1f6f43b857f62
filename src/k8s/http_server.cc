#include "k8s/http_server.h"

#include <httplib.h>

#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "common/units.h"

namespace xpool::k8s {

struct HttpServer::Impl {
  struct Route {
    bool post;
    std::string path;
    Handler handler;
  };
  std::vector<Route> routes;
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
};

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {}
HttpServer::~HttpServer() { Stop(); }

void HttpServer::Post(const std::string& path, Handler handler) {
  impl_->routes.push_back({true, path, std::move(handler)});
}
void HttpServer::Get(const std::string& path, Handler handler) {
  impl_->routes.push_back({false, path, std::move(handler)});
}

Result<int> HttpServer::Start(const std::string& host, int port, const std::string& cert_file,
                              const std::string& key_file) {
  if (impl_->server) return FailedPreconditionError("server already started");
  if (cert_file.empty() != key_file.empty()) {
    return InvalidArgumentError("give both a TLS certificate and its key, or neither");
  }
  if (!cert_file.empty()) {
    auto tls = std::make_unique<httplib::SSLServer>(cert_file.c_str(), key_file.c_str());
    if (!tls->is_valid()) {
      return UnavailableError("cannot load the TLS certificate " + cert_file + " and key " + key_file);
    }
    impl_->server = std::move(tls);
  } else {
    impl_->server = std::make_unique<httplib::Server>();
  }
  httplib::Server& s = *impl_->server;
  s.set_payload_max_length(64u << 20);  // a NodeList of a large cluster fits; larger is refused
  for (const Impl::Route& r : impl_->routes) {
    auto serve = [handler = r.handler](const httplib::Request& req, httplib::Response& res) {
      HttpReply reply = handler(req.body);
      res.status = reply.status;
      res.set_content(reply.body, reply.content_type.c_str());
    };
    if (r.post) {
      s.Post(r.path, serve);
    } else {
      s.Get(r.path, serve);
    }
  }
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    res.status = 500;
    res.set_content("internal error\n", "text/plain");
  });
  int bound = port;
  if (port == 0) {
    bound = s.bind_to_any_port(host);
    if (bound < 0) {
      impl_->server.reset();
      return UnavailableError("cannot bind " + host + " on any port");
    }
  } else if (!s.bind_to_port(host, port)) {
    impl_->server.reset();
    return UnavailableError("cannot bind " + host + ":" + std::to_string(port) + " (in use?)");
  }
  impl_->thread = std::thread([&s] { s.listen_after_bind(); });
  for (int i = 0; i < 5000 && !s.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return bound;
}

void HttpServer::Stop() {
  if (!impl_ || !impl_->server) return;
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->server.reset();
}

Status ParseListenAddress(std::string_view text, std::string* host, int* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return InvalidArgumentError("listen address \"" + std::string(text) + "\" must be host:port or :port");
  }
  *host = colon == 0 ? "0.0.0.0" : std::string(text.substr(0, colon));
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  Result<int64_t> p = ParseNonNegativeInt(text.substr(colon + 1));
  if (!p.ok() || *p > 65535) {
    return InvalidArgumentError("listen address \"" + std::string(text) + "\": port must be 0..65535");
  }
  *port = static_cast<int>(*p);
  return Status::Ok();
}

}  // namespace xpool::k8s
