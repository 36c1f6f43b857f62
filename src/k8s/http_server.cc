#include "k8s/http_server.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
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

  // TLS: the identity every new connection is served with (SSL_CTX_set_cert_cb), replaced by a reload.
  std::string cert_file, key_file;
  std::mutex tls_mu;
  X509* cert = nullptr;                                 // guarded by tls_mu
  EVP_PKEY* key = nullptr;                              // guarded by tls_mu
  STACK_OF(X509) * chain = nullptr;                     // guarded by tls_mu
  std::filesystem::file_time_type cert_time, key_time;  // guarded by tls_mu
  int64_t reload_ms = 0;
  std::thread reloader;
  std::condition_variable stop_cv;
  bool stopping = false;  // guarded by tls_mu

  ~Impl() { FreeIdentity(); }
  void FreeIdentity() {
    X509_free(cert);
    EVP_PKEY_free(key);
    sk_X509_pop_free(chain, X509_free);
    cert = nullptr;
    key = nullptr;
    chain = nullptr;
  }

  static int ServeIdentity(SSL* ssl, void* arg) {
    Impl* impl = static_cast<Impl*>(arg);
    std::lock_guard<std::mutex> lock(impl->tls_mu);
    if (impl->cert == nullptr) return 1;  // the context's own (loaded at start)
    return SSL_use_cert_and_key(ssl, impl->cert, impl->key, impl->chain, 1) == 1 ? 1 : 0;
  }

  // Loads the certificate (with its chain) and key; replaces the served identity only when both load.
  Status Load() {
    BIO* cert_bio = BIO_new_file(cert_file.c_str(), "r");
    BIO* key_bio = BIO_new_file(key_file.c_str(), "r");
    X509* new_cert = cert_bio != nullptr ? PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr) : nullptr;
    STACK_OF(X509)* new_chain = sk_X509_new_null();
    while (new_cert != nullptr) {
      X509* extra = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
      if (extra == nullptr) break;
      sk_X509_push(new_chain, extra);
    }
    EVP_PKEY* new_key = key_bio != nullptr ? PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr) : nullptr;
    BIO_free(cert_bio);
    BIO_free(key_bio);
    if (new_cert == nullptr || new_key == nullptr || X509_check_private_key(new_cert, new_key) != 1) {
      X509_free(new_cert);
      EVP_PKEY_free(new_key);
      sk_X509_pop_free(new_chain, X509_free);
      return UnavailableError("cannot load the TLS certificate " + cert_file + " and key " + key_file);
    }
    std::error_code ec;
    std::lock_guard<std::mutex> lock(tls_mu);
    FreeIdentity();
    cert = new_cert;
    key = new_key;
    chain = new_chain;
    cert_time = std::filesystem::last_write_time(cert_file, ec);
    key_time = std::filesystem::last_write_time(key_file, ec);
    return Status::Ok();
  }

  bool Changed() {
    std::error_code ec1, ec2;
    const auto c = std::filesystem::last_write_time(cert_file, ec1);
    const auto k = std::filesystem::last_write_time(key_file, ec2);
    std::lock_guard<std::mutex> lock(tls_mu);
    return !ec1 && !ec2 && (c != cert_time || k != key_time);
  }

  void ReloadLoop() {
    std::unique_lock<std::mutex> lock(tls_mu);
    while (!stop_cv.wait_for(lock, std::chrono::milliseconds(reload_ms), [this] { return stopping; })) {
      lock.unlock();
      if (Changed()) {
        Status s = Load();
        std::fprintf(stderr, "xpool: TLS certificate %s: %s\n", cert_file.c_str(),
                     s.ok() ? "reloaded" : s.message().c_str());
      }
      lock.lock();
    }
  }
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
    impl_->cert_file = cert_file;
    impl_->key_file = key_file;
    RETURN_IF_ERROR(impl_->Load());
    SSL_CTX_set_cert_cb(tls->ssl_context(), &Impl::ServeIdentity, impl_.get());
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
  if (!cert_file.empty() && impl_->reload_ms > 0) {
    impl_->stopping = false;
    impl_->reloader = std::thread([impl = impl_.get()] { impl->ReloadLoop(); });
  }
  return bound;
}

void HttpServer::SetCertificateReload(int64_t interval_ms) { impl_->reload_ms = interval_ms; }

Status HttpServer::ReloadCertificate() {
  if (impl_->cert_file.empty()) return FailedPreconditionError("the server does not serve TLS");
  return impl_->Load();
}

void HttpServer::Stop() {
  if (!impl_) return;
  if (impl_->reloader.joinable()) {
    {
      std::lock_guard<std::mutex> lock(impl_->tls_mu);
      impl_->stopping = true;
    }
    impl_->stop_cv.notify_all();
    impl_->reloader.join();
  }
  if (!impl_->server) return;
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
